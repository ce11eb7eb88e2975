package policydiff

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
)

// Write prints the report as tables for people.
func (rep *Report) Write(w io.Writer) error {
	fmt.Fprintf(w, "OLD %s (revision %.12s)\nNEW %s (revision %.12s)\n", rep.Old.Path, rep.Old.Revision, rep.New.Path, rep.New.Revision)
	c := rep.Compared
	who := "tokens"
	if rep.Mode == "synthetic" {
		who = "synthetic principals (4 tokens each)"
	}
	fmt.Fprintf(w, "compared (%s): %d %s × %d routes = %d decisions; %d accounts × %d scopes (%s)\n",
		rep.Mode, c.Callers, who, c.Routes, c.Decisions, c.Accounts, len(c.Resources), strings.Join(c.Resources, ", "))
	if len(rep.Decisions) == 0 && len(rep.Rows) == 0 {
		fmt.Fprintln(w, "no changes")
		fmt.Fprintf(w, "not compared: %s\n", strings.Join(rep.NotCompared, "; "))
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "\ndecisions that change: %d groups\n", len(rep.Decisions))
	if len(rep.Decisions) > 0 {
		fmt.Fprintln(tw, "ROUTE\tACCOUNT TYPE\tOLD\tNEW\tCOUNT\t\tEXAMPLES")
		for _, d := range rep.Decisions {
			mark := ""
			if d.Widens {
				mark = "WIDENS"
			}
			ex := make([]string, len(d.Examples))
			for i, e := range d.Examples {
				ex[i] = e.String()
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", d.Route, d.AccountType, d.Old, d.New, d.Count, mark, strings.Join(ex, "; "))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nrows that change: %d account scopes\n", len(rep.Rows))
	if len(rep.Rows) > 0 {
		fmt.Fprintln(tw, "RESOURCE\tACCOUNT\tNEW ONLY\tOLD ONLY\t\tNEW-ONLY EXAMPLES\tOLD-ONLY EXAMPLES")
		for _, r := range rep.Rows {
			mark := ""
			if r.Added.Count > 0 {
				mark = "WIDENS"
			}
			acct := fmt.Sprintf("%d %s (%s)", r.AccountID, r.Username, r.AccountType)
			if r.Principal != "" {
				acct = r.Principal
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", r.Resource, acct, r.Added.Count, r.Removed.Count, mark,
				examples(r.Added.Examples), examples(r.Removed.Examples))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nnot compared: %s\n", strings.Join(rep.NotCompared, "; "))
	if rep.Widens {
		fmt.Fprintln(w, "verdict: NEW grants access that OLD does not (exit status 3)")
	} else {
		fmt.Fprintln(w, "verdict: NEW grants nothing that OLD does not (it only narrows or changes denial codes)")
	}
	return nil
}

// String names the caller for people: a synthetic principal with its
// token's permissions, or a token of the database with its account.
func (c Caller) String() string {
	if c.Principal != "" {
		return fmt.Sprintf("%s, token %q", c.Principal, strings.Join(c.Permissions, " "))
	}
	return fmt.Sprintf("token %d (account %d %s)", c.TokenID, c.AccountID, c.Username)
}

// examples prints example ids or synthetic rows.
func examples(ex []any) string {
	if len(ex) == 0 {
		return "-"
	}
	parts := make([]string, len(ex))
	for i, e := range ex {
		if m, ok := e.(map[string]any); ok {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			kv := make([]string, len(keys))
			for j, k := range keys {
				v := m[k]
				if v == nil {
					v = "null"
				}
				kv[j] = fmt.Sprintf("%s=%v", k, v)
			}
			parts[i] = "{" + strings.Join(kv, " ") + "}"
			continue
		}
		parts[i] = fmt.Sprint(e)
	}
	return strings.Join(parts, ", ")
}
