package storagetest

import (
	"context"
	"fmt"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"
)

// Occurrence is a stored value that holds one of the strings a Scan looks
// for.
type Occurrence struct {
	Table, Column, Needle, Value string
}

// String reads like `audit_events.changes holds "zq-erin": {...}`.
func (o Occurrence) String() string {
	return fmt.Sprintf("%s.%s holds %q: %s", o.Table, o.Column, o.Needle, o.Value)
}

// TextColumns returns every column of every table of the public schema
// that can hold a name, an e-mail or an IMEI: text, varchar, char, json,
// jsonb and arrays of text, varchar or char, as "table.column", read from
// information_schema (so that a new table or column is scanned too).
func TextColumns(ctx context.Context, db bun.IDB) ([][2]string, error) {
	var cols []struct {
		Table  string `bun:"table_name"`
		Column string `bun:"column_name"`
	}
	err := db.NewRaw(`SELECT c.table_name, c.column_name
		FROM information_schema.columns c JOIN information_schema.tables t
		  ON t.table_schema = c.table_schema AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE'
		WHERE c.table_schema = 'public'
		  AND (c.data_type IN ('text', 'character varying', 'character', 'json', 'jsonb')
		       OR (c.data_type = 'ARRAY' AND c.udt_name IN ('_text', '_varchar', '_bpchar')))
		ORDER BY 1, 2`).Scan(ctx, &cols)
	out := make([][2]string, len(cols))
	for i, c := range cols {
		out[i] = [2]string{c.Table, c.Column}
	}
	return out, err
}

// Scan looks for each of needles, as a substring whatever the case, in
// every value of every column TextColumns returns, and returns where it
// found them (a JSON or array value as its text).
func Scan(ctx context.Context, db bun.IDB, needles []string) ([]Occurrence, error) {
	cols, err := TextColumns(ctx, db)
	if err != nil {
		return nil, err
	}
	var out []Occurrence
	for _, c := range cols {
		var found []Occurrence
		if err := db.NewRaw(`SELECT DISTINCT ? AS "table", ? AS "column", n.needle, x.v AS value
			FROM (SELECT ?::text AS v FROM ?) AS x, unnest(?::text[]) AS n(needle)
			WHERE strpos(lower(x.v), lower(n.needle)) > 0 ORDER BY 3, 4`,
			c[0], c[1], bun.Ident(c[1]), bun.Ident(c[0]), pgdialect.Array(needles)).Scan(ctx, &found); err != nil {
			return nil, fmt.Errorf("scan %s.%s: %w", c[0], c[1], err)
		}
		out = append(out, found...)
	}
	return out, nil
}
