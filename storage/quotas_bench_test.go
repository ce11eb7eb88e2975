package storage_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// BenchmarkCreatePassengerQuota is one passenger create (its own
// transaction) with the platform default quotas (the passengers quota
// checked: the account's row locked FOR NO KEY UPDATE, then its counter
// read) and with every quota unlimited (the row still locked, nothing
// counted): the cost of the quota check per create (docs/performance.md,
// "Quotas").
func BenchmarkCreatePassengerQuota(b *testing.B) {
	defaultPassengers := int64(1_000_000)
	for _, c := range []struct {
		name   string
		quotas storage.Quotas
	}{
		{"default", storage.Quotas{Passengers: &defaultPassengers}},
		{"unlimited", storage.Quotas{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			db := storagetest.New(b)
			if _, err := importfile.Load(ctx, db.DB, bytes.NewReader(demodata.File())); err != nil {
				b.Fatal(err)
			}
			s := storage.NewStore(db.DB).WithQuotas(c.quotas)
			e := newEngine(b)
			acme := principalOf(b, s, "acme").Account
			scope := scopeOf(b, e, s, "acme", "passengers")
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				p := storage.Passenger{PassengerName: fmt.Sprintf("bench %d", i), PassengerActive: true}
				if _, _, err := s.CreatePassenger(ctx, scope, acme.ID, p, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
