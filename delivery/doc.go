// Package delivery sends the webhook deliveries queued in PostgreSQL
// (docs/design.md §14, "Deliveries"): every replica runs a set of
// workers; each attempt is one transaction that claims one due delivery
// (storage.Store.ClaimDelivery: FOR UPDATE SKIP LOCKED, one of the
// endpoint's slots), decides again what the webhook's owner may list now
// (the policy's decision and notifications scope), sends the signed
// message while it holds the row's lock, and records the attempt
// (storage.Claim.Record) in the same transaction. A sender killed during
// a send, or a database lost, leaves the row uncommitted: another sends
// it again with the same webhook-id (at least once); an erase, which
// deletes the rows, waits for a send in flight.
package delivery
