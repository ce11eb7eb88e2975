// Package limits holds the tenant limits on what a customer creates
// (docs/design.md §12): the quotas, their limits in force (an account's
// overrides, else the platform defaults; none for an admin), the use
// that the creates count against them, and the checks that refuse one
// row too many (QuotaError). A check runs in the create's transaction
// after storage locked the account's row: storage's writers call it, and
// it runs no scoped query and imports nothing of storage.
package limits
