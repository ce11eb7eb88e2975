package storagetest

import "testing"

// TestPgBouncerBackend: every form of URL the helper finds PostgreSQL at
// becomes the [databases] connection string PgBouncer needs, with the
// URL's user and password for its userlist.
func TestPgBouncerBackend(t *testing.T) {
	cases := []struct {
		url, backend, user, password string
	}{
		{"postgres://postgres@127.0.0.1:5432/fleetapi?sslmode=disable", "host=127.0.0.1 port=5432", "postgres", ""},
		{"postgres://fleet:s3cret@db.internal/fleetapi", "host=db.internal port=5432", "fleet", "s3cret"},
		{"postgres://postgres@127.0.0.1:6543/x", "host=127.0.0.1 port=6543", "postgres", ""},
		// the private cluster: pgdriver takes the socket file itself
		{"postgres://postgres@/fleetapi?host=%2Fw%2F.pgtest%2Fsocket%2F.s.PGSQL.5433&sslmode=disable", "host=/w/.pgtest/socket port=5433", "postgres", ""},
		// a socket folder as libpq writes it
		{"postgres:///fleetapi?host=/var/run/postgresql", "host=/var/run/postgresql port=5432", "postgres", ""},
	}
	for _, c := range cases {
		backend, user, password, err := pgbouncerBackend(c.url)
		if err != nil {
			t.Errorf("%s: %v", c.url, err)
			continue
		}
		if backend != c.backend || user != c.user || password != c.password {
			t.Errorf("%s: got %q %q %q, want %q %q %q", c.url, backend, user, password, c.backend, c.user, c.password)
		}
	}
}
