package synth

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/driver/pgdriver"

	"github.com/fleetapi/fleetapi/storage"
)

// copyChunkBytes is how much COPY text the generator buffers before it
// sends one COPY statement: it bounds memory and the after-trigger queue
// (the foreign-key checks) of each statement.
const copyChunkBytes = 16 << 20

// copier streams rows of one table into PostgreSQL with COPY ... FROM STDIN
// in text format, one COPY statement per chunk, all on the caller's
// connection (and so inside its transaction). With freeze, rows are written
// frozen and their pages all-visible (COPY FREEZE), which requires that the
// table was truncated in the same transaction.
type copier struct {
	ctx    context.Context
	conn   bun.Conn
	stmt   string
	buf    bytes.Buffer
	row    copyRow
	rows   int64
	copied int64
}

func newCopier(ctx context.Context, conn bun.Conn, table string, columns []string, freeze bool) *copier {
	stmt := fmt.Sprintf("COPY %s (%s) FROM STDIN", table, strings.Join(columns, ", "))
	if freeze {
		stmt += " WITH (FREEZE)"
	}
	c := &copier{ctx: ctx, conn: conn, stmt: stmt}
	c.buf.Grow(copyChunkBytes + 64<<10)
	return c
}

// next starts a new row and returns it for the caller's fields.
func (c *copier) next() *copyRow {
	c.row.b = c.row.b[:0]
	c.row.n = 0
	return &c.row
}

// end finishes the row started by next; a full chunk is sent.
func (c *copier) end() error {
	c.row.b = append(c.row.b, '\n')
	c.buf.Write(c.row.b)
	c.rows++
	if c.buf.Len() >= copyChunkBytes {
		return c.flush()
	}
	return nil
}

// flush sends the buffered rows as one COPY statement.
func (c *copier) flush() error {
	if c.buf.Len() == 0 {
		return nil
	}
	res, err := pgdriver.CopyFrom(c.ctx, c.conn, bytes.NewReader(c.buf.Bytes()), c.stmt)
	if err != nil {
		return fmt.Errorf("%s: %w", c.stmt, storage.Translate(err))
	}
	n, _ := res.RowsAffected()
	c.copied += n
	c.buf.Reset()
	return nil
}

// close sends what is left and checks that PostgreSQL stored every row.
func (c *copier) close() (int64, error) {
	if err := c.flush(); err != nil {
		return c.copied, err
	}
	if c.copied != c.rows {
		return c.copied, fmt.Errorf("%s: wrote %d rows, PostgreSQL stored %d", c.stmt, c.rows, c.copied)
	}
	return c.copied, nil
}

// copyRow builds one line of COPY text format: fields separated by tabs,
// backslash escapes, \N for NULL.
type copyRow struct {
	b []byte
	n int
}

func (r *copyRow) sep() {
	if r.n > 0 {
		r.b = append(r.b, '\t')
	}
	r.n++
}

// end finishes the row on c (see copier.end).
func (r *copyRow) end(c *copier) error { return c.end() }

// Int appends an integer field.
func (r *copyRow) Int(v int64) *copyRow {
	r.sep()
	r.b = strconv.AppendInt(r.b, v, 10)
	return r
}

// Bool appends a boolean field.
func (r *copyRow) Bool(v bool) *copyRow {
	r.sep()
	if v {
		r.b = append(r.b, 't')
	} else {
		r.b = append(r.b, 'f')
	}
	return r
}

// Null appends a NULL field.
func (r *copyRow) Null() *copyRow {
	r.sep()
	r.b = append(r.b, `\N`...)
	return r
}

// Text appends a text field, escaped for COPY.
func (r *copyRow) Text(s string) *copyRow {
	r.sep()
	r.b = appendCopyEscaped(r.b, s)
	return r
}

// Date appends a date field (YYYY-MM-DD).
func (r *copyRow) Date(t time.Time) *copyRow {
	r.sep()
	r.b = t.AppendFormat(r.b, storage.DateLayout)
	return r
}

// Time appends a timestamptz field (RFC 3339).
func (r *copyRow) Time(t time.Time) *copyRow {
	r.sep()
	r.b = t.UTC().AppendFormat(r.b, time.RFC3339)
	return r
}

// TextArray appends a text[] field: an array literal with every element
// double-quoted, then escaped for COPY.
func (r *copyRow) TextArray(items []string) *copyRow {
	r.sep()
	var lit []byte
	lit = append(lit, '{')
	for i, s := range items {
		if i > 0 {
			lit = append(lit, ',')
		}
		lit = append(lit, '"')
		for j := 0; j < len(s); j++ {
			if s[j] == '"' || s[j] == '\\' {
				lit = append(lit, '\\')
			}
			lit = append(lit, s[j])
		}
		lit = append(lit, '"')
	}
	lit = append(lit, '}')
	r.b = appendCopyEscaped(r.b, string(lit))
	return r
}

// appendCopyEscaped escapes the characters that COPY text format treats
// specially: backslash, tab, newline and carriage return.
func appendCopyEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '\t':
			b = append(b, `\t`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		default:
			b = append(b, c)
		}
	}
	return b
}
