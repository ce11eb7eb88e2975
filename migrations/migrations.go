// Package migrations holds fleetapi's ordered SQL schema migrations, embedded
// in the binary and applied by bun's migrator.
package migrations

import (
	"embed"

	"github.com/uptrace/bun/migrate"
)

//go:embed *.sql
var files embed.FS

// New returns the embedded migrations, discovered from their file names
// (<version>_<name>.up.sql / .down.sql).
func New() (*migrate.Migrations, error) {
	m := migrate.NewMigrations()
	if err := m.Discover(files); err != nil {
		return nil, err
	}
	return m, nil
}

// Files returns the embedded migration files, so that callers can hash them
// (the test helper keys its template database on that hash).
func Files() embed.FS { return files }
