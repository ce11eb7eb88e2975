package storage_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/importfile"
	"github.com/fleetapi/fleetapi/storage/limits"
	"github.com/fleetapi/fleetapi/storage/storagetest"
)

// BenchmarkCreatePassengerQuota is one passenger create (its own
// transaction) with the platform default quotas (the passengers quota
// checked: far from the limit, the shared check — the account's row
// locked FOR SHARE, then its counter read) and with every quota unlimited
// (the row locked FOR SHARE, nothing counted), one create at a time and
// 16 at once in the one account: the cost of the quota check per create
// (docs/performance.md, "Quotas").
func BenchmarkCreatePassengerQuota(b *testing.B) {
	defaultPassengers := int64(1_000_000)
	for _, c := range []struct {
		name   string
		quotas limits.Quotas
	}{
		{"default", limits.Quotas{Passengers: &defaultPassengers}},
		{"unlimited", limits.Quotas{}},
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
			b.Run("serial", func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					p := storage.Passenger{PassengerName: fmt.Sprintf("bench %d", i), PassengerActive: true}
					if _, _, err := s.CreatePassenger(ctx, scope, acme.ID, p, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
			// 16 creators of the one account at once (8 per CPU on the
			// 2-core machine): what the harness's passenger_create does.
			b.Run("concurrent16", func(b *testing.B) {
				b.ReportAllocs()
				b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						p := storage.Passenger{PassengerName: "bench concurrent", PassengerActive: true}
						if _, _, err := s.CreatePassenger(ctx, scope, acme.ID, p, nil); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}
