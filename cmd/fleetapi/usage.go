package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/fleetapi/fleetapi/storage"
)

// usageColumns are the columns of the export, in order (the CSV header and
// the JSON keys).
var usageColumns = []string{"day", "account_id", "username", "route", "requests", "rows_returned", "writes", "errors_4xx", "errors_5xx", "bytes_out",
	"billed_account_id", "billed_username"}

func runUsageExport(ctx context.Context, args []string, getenv func(string) string, con console) error {
	cmd := newCommand("usage export", "--from YYYY-MM-DD --to YYYY-MM-DD [--format csv|jsonl] [flags]",
		`Write the usage of every account from the UTC day --from to the UTC day --to
(inclusive) to standard output, one row per day, account and route template,
ordered by day, account and route: day, account_id, username, route,
requests, rows_returned, writes, errors_4xx, errors_5xx, bytes_out,
billed_account_id, billed_username. CSV has a header line; jsonl is one JSON
object per line. For an operator's billing system: the servers add their
counts every FLEET_USAGE_FLUSH_INTERVAL, so export a day once it is over and
that interval has passed. An erased account's usage stays, its username
"[erased]"; billed_account_id is the account billed for each row (the top
of the account's tree below the admins, recorded when counted).`)
	cfg := databaseCommand(cmd, getenv)
	var from, to, format string
	cmd.fs.StringVar(&from, "from", "", "first UTC day, YYYY-MM-DD (required)")
	cmd.fs.StringVar(&to, "to", "", "last UTC day, YYYY-MM-DD, inclusive (required)")
	cmd.fs.StringVar(&format, "format", "csv", "csv or jsonl")
	if err := cmd.parseArgs(args, con, 0, 0); err != nil {
		return err
	}
	if from == "" || to == "" {
		return usagef(cmd.name, "usage export: --from and --to are required")
	}
	f, err := storage.ParseDate(from)
	if err != nil {
		return usagef(cmd.name, "usage export: --from: %v", err)
	}
	t, err := storage.ParseDate(to)
	if err != nil {
		return usagef(cmd.name, "usage export: --to: %v", err)
	}
	if f.After(t.Time) {
		return usagef(cmd.name, "usage export: --from %s is after --to %s", f, t)
	}
	var write func(storage.UsageRow) error
	var flush func() error
	switch format {
	case "csv":
		w := csv.NewWriter(con.out)
		if err := w.Write(usageColumns); err != nil {
			return err
		}
		write = func(r storage.UsageRow) error {
			return w.Write([]string{r.Day, strconv.FormatInt(r.AccountID, 10), r.Username, r.Route, strconv.FormatInt(r.Requests, 10),
				strconv.FormatInt(r.RowsReturned, 10), strconv.FormatInt(r.Writes, 10), strconv.FormatInt(r.Errors4xx, 10),
				strconv.FormatInt(r.Errors5xx, 10), strconv.FormatInt(r.BytesOut, 10), strconv.FormatInt(r.BilledAccountID, 10), r.BilledUsername})
		}
		flush = func() error { w.Flush(); return w.Error() }
	case "jsonl":
		enc := json.NewEncoder(con.out)
		enc.SetEscapeHTML(false)
		write = func(r storage.UsageRow) error { return enc.Encode(r) }
		flush = func() error { return nil }
	default:
		return usagef(cmd.name, "usage export: --format %q: want csv or jsonl", format)
	}
	db := storage.Open(cfg.databaseURL(), storage.Options{MaxOpenConns: 2})
	defer db.Close()
	if err := storage.NewStore(db).ExportUsage(ctx, f, t, write); err != nil {
		return fmt.Errorf("usage export: %w", err)
	}
	return flush()
}
