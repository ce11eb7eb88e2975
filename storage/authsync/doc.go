// Package authsync keeps every replica's authentication cache
// (tenancy.PrincipalCache) consistent with the database: a Listener
// applies the invalidations the triggers announce on Channel, proves its
// freshness with pings and holds a lease in fleet_auth_replicas; a writer
// that changed what a principal is made of waits with AwaitAcks until
// every replica with a live lease has acknowledged the change. It knows
// the auth tables' notifications and leases only: it runs no scoped query
// and imports nothing of storage (storage's writers call it).
package authsync
