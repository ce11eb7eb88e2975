package storage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/storage/demodata"
	"github.com/fleetapi/fleetapi/storage/storagetest"
	"github.com/fleetapi/fleetapi/tenancy"
)

// TestAuthenticationWithoutPrimary: while the primary cannot be reached
// (a fail-over: no primary until a standby is promoted), the token lookup
// is answered by a usable read replica, marked FromStandby (so neither
// cached nor touched); with the primary reachable it is read there. Without
// a usable replica the lookup is ErrUnavailable (503). On the old main the
// lookup failed whenever the primary did, so every read route answered 503
// during a fail-over (docs/design.md §13).
func TestAuthenticationWithoutPrimary(t *testing.T) {
	r := newReplicated(t, time.Hour)
	ctx := context.Background()
	proxy := storagetest.NewProxy(t, r.URL)
	primary := storage.Open(proxy.URL, storage.Options{MaxOpenConns: 4, DialTimeout: time.Second})
	defer primary.Close()
	reps, err := storage.NewReplicas(primary, []*bun.DB{r.Standby}, storage.ReplicaOptions{MaxLag: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	reps.Check(ctx)
	if !reps.Usable(0) {
		t.Fatal("the standby is not usable")
	}
	s := storage.NewStore(primary).WithReplicas(reps)
	var secret string
	for _, tok := range demodata.Tokens() {
		if tok.Name == "acme-all" {
			secret = tok.Secret
		}
	}
	hash, err := tenancy.HashToken(secret)
	if err != nil {
		t.Fatal(err)
	}
	onPrimary, found, err := s.PrincipalByTokenHash(ctx, hash)
	if err != nil || !found || onPrimary.FromStandby {
		t.Fatalf("with the primary: found %v, from a standby %v, %v", found, onPrimary.FromStandby, err)
	}

	proxy.Close() // the primary is gone: connections refused
	onStandby, found, err := s.PrincipalByTokenHash(ctx, hash)
	if err != nil || !found {
		t.Fatalf("without the primary: found %v, %v; want the standby's answer", found, err)
	}
	if !onStandby.FromStandby || onStandby.Token.ID != onPrimary.Token.ID || onStandby.Account.ID != onPrimary.Account.ID {
		t.Errorf("without the primary: %+v, want the same token and account, FromStandby", onStandby)
	}
	unknown, _ := tenancy.HashToken("flt_" + "Unknown0000000000000000000000000")
	if _, found, err := s.PrincipalByTokenHash(ctx, unknown); err != nil || found {
		t.Errorf("an unknown token without the primary: found %v, %v; want not found", found, err)
	}

	// Without a usable replica: unavailable.
	noReps, err := storage.NewReplicas(primary, []*bun.DB{r.Standby}, storage.ReplicaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := storage.NewStore(primary).WithReplicas(noReps).PrincipalByTokenHash(ctx, hash); !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("without the primary and a usable replica: %v, want ErrUnavailable", err)
	}
}
