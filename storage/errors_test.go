package storage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fleetapi/fleetapi/storage"
)

func TestTranslate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := newStore(t)
	importJSON(t, s, []byte(`{"accounts": [{"username": "acme", "type": "user"}]}`))

	tests := []struct {
		name string
		run  func() error
		want error
	}{
		{"unique_violation_is_conflict", func() error {
			_, err := db.NewInsert().Model(&storage.Account{Username: "acme", Type: "user"}).Exec(ctx)
			return err
		}, storage.ErrConflict},
		{"foreign_key_violation_is_invalid", func() error {
			_, err := db.NewInsert().Model(&storage.Object{IMEI: "1", AccountID: 424242}).Exec(ctx)
			return err
		}, storage.ErrInvalid},
		{"check_violation_is_invalid", func() error {
			_, err := db.NewInsert().Model(&storage.Account{Username: "sub", Type: "subaccount"}).Exec(ctx)
			return err
		}, storage.ErrInvalid},
		{"no_rows_is_not_found", func() error {
			return db.NewSelect().Model(new(storage.Account)).Where("id = ?", -1).Scan(ctx)
		}, storage.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := storage.Translate(tc.run())
			if !errors.Is(err, tc.want) {
				t.Fatalf("Translate: %v, want %v", err, tc.want)
			}
			if again := storage.Translate(err); again.Error() != err.Error() {
				t.Fatalf("Translate is not idempotent: %q then %q", err, again)
			}
		})
	}
	t.Run("nil_is_nil", func(t *testing.T) {
		if storage.Translate(nil) != nil {
			t.Fatal("Translate(nil) != nil")
		}
	})
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("unreachable_server", func(t *testing.T) {
		db := storage.Open("postgres://postgres@127.0.0.1:1/x?sslmode=disable", storage.Options{DialTimeout: time.Second})
		t.Cleanup(func() { db.Close() })
		if err := storage.NewStore(db).Ping(ctx); !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("Ping: %v, want ErrUnavailable", err)
		}
		_, err := storage.NewStore(db).AccountByUsername(ctx, "acme")
		if !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("AccountByUsername: %v, want ErrUnavailable", err)
		}
	})
	t.Run("closed_pool", func(t *testing.T) {
		s, db := newStore(t)
		if err := s.Ping(ctx); err != nil {
			t.Fatalf("Ping on an open database: %v", err)
		}
		db.Close()
		if err := s.Ping(ctx); !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("Ping: %v, want ErrUnavailable", err)
		}
	})
}
