// Package demodata is the demo data set: an import file (DESIGN §8) with
// two tenants and tokens whose secrets are public, and the guards that
// keep those tokens away from real data (DESIGN §7). It is a trusted
// whole-table job of the command line (`fleetapi dev`, `import`, `serve`'s
// start-up check, `token`), never used on the request path: its guards
// read the accounts and tokens tables through a raw database handle,
// without a policy scope.
package demodata

import (
	_ "embed"

	"github.com/fleetapi/fleetapi/tenancy"
)

//go:embed demodata.json
var fileJSON []byte

// File returns the demo data set: an import file (DESIGN §8) with two
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

// Tokens returns the tokens of File with their public secrets, in the
// order of the file.
func Tokens() []Token {
	all := []string{"*"}
	return []Token{
		{"admin", "admin-all", "flt_demoAdmin00000000000000000000000", tenancy.Admin, all,
			"admin: sees every row of both tenants"},
		{"fleetco", "fleetco-all", "flt_demoFleetco000000000000000000000", tenancy.Manager, all,
			"manager of tenant 1: rows of acme, globex, umbrella, hooli, soylent; none of northwind's"},
		{"acme", "acme-all", "flt_demoAcme000000000000000000000000", tenancy.User, all,
			"user: acme's own rows; POST /passengers works"},
		{"acme", "acme-services-only", "flt_demoAcmeServices0000000000000000", tenancy.User, []string{"GET /services"},
			"narrow token: GET /services only; GET /reports → 403 TOKEN_PERMISSION_DENIED"},
		{"acme", "acme-expired", "flt_demoAcmeExpired00000000000000000", tenancy.User, all,
			"token expired on 2025-01-01 → 401 TOKEN_EXPIRED"},
		{"acme", "acme-ratelimited", "flt_demoAcmeLimited00000000000000000", tenancy.User, all,
			"token limited to 5 requests per minute → 429 RATE_LIMITED"},
		{"globex", "globex-read", "flt_demoGlobexRead000000000000000000", tenancy.User, []string{"GET *"},
			"GET-only token: POST /passengers → 403 TOKEN_PERMISSION_DENIED"},
		{"umbrella", "umbrella-all", "flt_demoUmbrella00000000000000000000", tenancy.User, all,
			"read-only account: POST /passengers → 403 READ_ONLY_ACCOUNT"},
		{"acme-night", "acme-night-all", "flt_demoAcmeNight0000000000000000000", tenancy.Subaccount, all,
			"subaccount of acme granted Truck 7 with the reports privilege: sees only Truck 7's rows; /events → 403 PRIVILEGE_REQUIRED"},
		{"hooli", "hooli-all", "flt_demoHooli00000000000000000000000", tenancy.User, all,
			"inactive account → 401 ACCOUNT_INACTIVE"},
		{"soylent", "soylent-all", "flt_demoSoylent000000000000000000000", tenancy.User, all,
			"account expired on 2025-01-31 → 401 ACCOUNT_EXPIRED"},
		{"northwind", "northwind-all", "flt_demoNorthwind0000000000000000000", tenancy.Manager, all,
			"manager of tenant 2: rows of tailspin and contoso; none of fleetco's"},
		{"tailspin", "tailspin-all", "flt_demoTailspin00000000000000000000", tenancy.User, all,
			"user of tenant 2: tailspin's own rows"},
		{"globex-day", "globex-day-all", "flt_demoGlobexDay0000000000000000000", tenancy.Subaccount, all,
			"subaccount of globex granted Reefer 21 with only event_notifications: GET /reports → 403 PRIVILEGE_REQUIRED"},
	}
}
