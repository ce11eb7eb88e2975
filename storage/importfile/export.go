package importfile

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/fleetapi/fleetapi/storage"
)

// Export writes the subtree of the account username (docs/design.md §12: the
// account, its subaccounts or the accounts it manages and theirs, with
// their devices, grants, tokens, services, reports, event rules and
// passengers) to w in the import format, read from one snapshot of db.
// Loading the file into an empty database makes the same rows: the same
// values in every column, the ids the database assigns aside (references
// are by natural key). Tokens are written with the hash of their secret
// (secret_hash), never the secret, which is not stored: imported, they
// keep working. Two things of the subtree are not its own and are not
// written: the root's manager is named (an import needs it to exist, or
// the root's manager field removed to make it a top-level account), and a
// token minted by a token outside the subtree is written without its
// parent. It returns the number of records of each section (grants: the
// devices granted), ErrNotFound (worded) for an unknown username and
// storage.ErrUnavailable when the database cannot be reached.
func Export(ctx context.Context, db bun.IDB, username string, w io.Writer) (Result, error) {
	res := Result{}
	bw := bufio.NewWriter(w)
	err := db.RunInTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}, func(ctx context.Context, tx bun.Tx) error {
		ex, err := newExporter(ctx, tx, username)
		if err != nil {
			return err
		}
		if _, err := bw.WriteString("{"); err != nil {
			return err
		}
		first := true
		for _, s := range ordered() {
			if s.dump == nil {
				continue
			}
			sep := ",\n"
			if first {
				sep = "\n"
			}
			first = false
			if _, err := fmt.Fprintf(bw, "%s%q: [", sep, s.File); err != nil {
				return err
			}
			n := 0
			if err := s.dump(ctx, ex, func(raw json.RawMessage) error {
				if n > 0 {
					bw.WriteString(",")
				}
				bw.WriteString("\n  ")
				n++
				_, err := bw.Write(raw)
				return err
			}); err != nil {
				return err
			}
			res[s.Name] = Count{Inserted: n}
			if n > 0 {
				bw.WriteString("\n")
			}
			bw.WriteString("]")
		}
		res["grants"] = Count{Inserted: ex.granted}
		_, err = bw.WriteString("\n}\n")
		return err
	})
	if err != nil {
		return nil, storage.Translate(err)
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("export: write: %w", err)
	}
	return res, nil
}

// exporter reads one subtree inside Export's transaction.
type exporter struct {
	db bun.IDB
	// ids are the accounts of the subtree, the root first.
	ids []int64
	// names are their usernames by id.
	names map[int64]string
	// tokens names the subtree's tokens already written, by id (a
	// token's parent is written before it).
	tokens map[int64]tokenRef
	// granted counts the devices granted in the accounts' records.
	granted int
}

// newExporter finds the account username and its subtree: the accounts
// below it, level by level (the tree has at most four levels, docs/design.md §2).
func newExporter(ctx context.Context, db bun.IDB, username string) (*exporter, error) {
	var root storage.Account
	err := storage.Translate(db.NewSelect().Model(&root).Where("a.username = ?", username).Scan(ctx))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("%w: account %q not found", storage.ErrNotFound, username)
	}
	if err != nil {
		return nil, err
	}
	ex := &exporter{db: db, ids: []int64{root.ID}, names: map[int64]string{root.ID: root.Username}, tokens: map[int64]tokenRef{}}
	for level := []int64{root.ID}; len(level) > 0; {
		var below []storage.Account
		if err := db.NewSelect().Model(&below).Column("id", "username").
			Where("a.manager_id = ANY(?)", pgdialect.Array(level)).Order("a.id").Scan(ctx); err != nil {
			return nil, err
		}
		level = level[:0:0]
		for _, a := range below {
			if _, seen := ex.names[a.ID]; seen {
				return nil, fmt.Errorf("export: account %d is twice in the subtree of %q", a.ID, username)
			}
			ex.ids = append(ex.ids, a.ID)
			ex.names[a.ID] = a.Username
			level = append(level, a.ID)
		}
	}
	return ex, nil
}

// exportBatch is how many rows an export reads per statement.
const exportBatch = 1000

// eachRow calls fn with every row of the model M that belongs to the
// subtree (where, with the subtree's account ids as its one argument),
// in the order of its id column idCol, exportBatch rows at a time; idOf
// returns a row's id.
func eachRow[M any](ctx context.Context, ex *exporter, idCol, where string, idOf func(*M) int64, fn func(*M) error) error {
	var last int64
	for {
		var rows []M
		if err := ex.db.NewSelect().Model(&rows).Where(where, pgdialect.Array(ex.ids)).
			Where("?TableAlias.? > ?", bun.Ident(idCol), last).OrderExpr("?TableAlias.? ASC", bun.Ident(idCol)).
			Limit(exportBatch).Scan(ctx); err != nil {
			return err
		}
		for i := range rows {
			if err := fn(&rows[i]); err != nil {
				return err
			}
			last = idOf(&rows[i])
		}
		if len(rows) < exportBatch {
			return nil
		}
	}
}
