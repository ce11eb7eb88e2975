// Package paging is storage's paging layer: how a list's page is read
// (walk, keyset, by key from kept ids, deferred join) and where its total
// comes from (the page, the row counters, a kept total, a count), decided
// by two tables declared as data (Rows, Totals) that Choose consults,
// named by Explain on the list's span; and what those shapes need — the
// kept totals and ids per version of a scope's rows (Cache, kept.go), the
// deferred join's cost model (DeferPage), the keyset condition (Order).
// Only storage imports it: storage answers the facts (its descriptors,
// scopes and statements), this package decides (docs/architecture.md,
// "Paging").
package paging
