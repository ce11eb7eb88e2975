// Package demodata is the demo data set: an import file (docs/design.md §8) with
// two tenants and tokens whose secrets are public, and the guards that
// keep those tokens away from real data (docs/design.md §7). It is a trusted
// whole-table job of the command line (`fleetapi dev`, `import`, `serve`'s
// start-up check, `token`), never used on the request path: its guards
// read the accounts and tokens tables through a raw database handle,
// without a policy scope.
package demodata

import (
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/fleetapi/fleetapi/tenancy"
)

//go:embed demodata.json
var fileJSON []byte

// File returns the demo data set: an import file (docs/design.md §8) with two
// tenants (managers "fleetco" and "northwind" with their users), an admin,
// a subaccount, read-only, inactive and expired accounts, devices, services
// (some due, some not), reports, event rules, passengers and the tokens of
// Tokens. Load it with importfile.Load.
func File() []byte {
	return append([]byte(nil), fileJSON...)
}

// Token is one of the demo data's tokens. Its secret is public: it is
// for demonstrations and tests only.
type Token struct {
	Username    string
	Name        string
	Secret      string
	AccountType tenancy.AccountType
	Permissions []string
	// Note says what the token demonstrates.
	Note string
}

// notes says what each token of the demo data demonstrates, by token name.
func notes() map[string]string {
	return map[string]string{
		"admin-all":          "admin: sees every row of both tenants",
		"fleetco-all":        "manager of tenant 1: rows of acme, globex, umbrella, hooli, soylent; none of northwind's",
		"acme-all":           "user: acme's own rows; POST /passengers works",
		"acme-services-only": "narrow token: GET /services only; GET /reports → 403 TOKEN_PERMISSION_DENIED",
		"acme-expired":       "token expired on 2025-01-01 → 401 TOKEN_EXPIRED",
		"acme-ratelimited":   "token limited to 5 requests per minute → 429 RATE_LIMITED",
		"globex-read":        "GET-only token: POST /passengers → 403 TOKEN_PERMISSION_DENIED",
		"umbrella-all":       "read-only account: POST /passengers → 403 READ_ONLY_ACCOUNT",
		"acme-night-all":     "subaccount of acme granted Truck 7 with the reports privilege: sees only Truck 7's rows; /events → 403 PRIVILEGE_REQUIRED",
		"hooli-all":          "inactive account → 401 ACCOUNT_INACTIVE",
		"soylent-all":        "account expired on 2025-01-31 → 401 ACCOUNT_EXPIRED",
		"northwind-all":      "manager of tenant 2: rows of tailspin and contoso; none of fleetco's",
		"tailspin-all":       "user of tenant 2: tailspin's own rows",
		"globex-day-all":     "subaccount of globex granted Reefer 21 with only event_notifications: GET /reports → 403 PRIVILEGE_REQUIRED",
	}
}

// Tokens returns the tokens of File with their public secrets, in the
// order of the file: read from the file (account, name, secret,
// permissions, and the account's type from its accounts section), each
// with its note.
func Tokens() []Token {
	f, err := readFile()
	if err != nil {
		panic(err) // the embedded file, which its tests read
	}
	types := f.accountTypes()
	note := notes()
	out := make([]Token, len(f.Tokens))
	for i, t := range f.Tokens {
		out[i] = Token{Username: t.Account, Name: t.Name, Secret: t.Secret, AccountType: types[t.Account],
			Permissions: t.Permissions, Note: note[t.Name]}
	}
	return out
}

// demoFile is what Tokens and the guards read of the embedded file.
type demoFile struct {
	Accounts []struct {
		Username string              `json:"username"`
		Type     tenancy.AccountType `json:"type"`
	} `json:"accounts"`
	Tokens []struct {
		Account     string   `json:"account"`
		Name        string   `json:"name"`
		Secret      string   `json:"secret"`
		Permissions []string `json:"permissions"`
	} `json:"tokens"`
}

// readFile reads the embedded file's accounts and tokens.
func readFile() (demoFile, error) {
	var f demoFile
	if err := json.Unmarshal(fileJSON, &f); err != nil {
		return demoFile{}, fmt.Errorf("demo data: %w", err)
	}
	return f, nil
}

// accountTypes maps each username of the file to its account type.
func (f demoFile) accountTypes() map[string]tenancy.AccountType {
	out := map[string]tenancy.AccountType{}
	for _, a := range f.Accounts {
		out[a.Username] = a.Type
	}
	return out
}
