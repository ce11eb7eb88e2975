package api

import (
	"fmt"

	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/tenancy"
)

// registerMe declares GET /me.
func (s *Server) registerMe(g *fuego.Server) {
	fuego.Get(g, "/me", s.getMe, routeOptions(authErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("get_me"), fuego.OptionTags("Account"),
		fuego.OptionSummary("Read the authenticated account"),
		fuego.OptionDescription("The token's account and its effective permissions. Any valid token may read it; it takes no parameters."),
		respondsOne(accountSchema(), exampleAccount()),
	})...)
}

// Account is the wire form of the authenticated account (docs/api.md §7,
// docs/design.md §5).
type Account struct {
	ID        int64  `json:"id"`
	Username  string `json:"username"`
	Email     string `json:"email" format:"email"`
	ManagerID int64  `json:"manager_id" description:"The managing account (a subaccount's parent user); 0 when none."`
	Type      string `json:"type" enum:"admin,manager,user,subaccount"`
	// Active and AccountExpire are the strings "true" and "false".
	Active          string `json:"active" enum:"true,false"`
	AccountExpire   string `json:"account_expire" enum:"true,false"`
	AccountExpireDt string `json:"account_expire_dt" description:"YYYY-MM-DD, or empty when the account has no expiry date."`
	// Timezone is an extra field beyond the spec's (docs/design.md §5).
	Timezone    string      `json:"timezone"`
	Permissions Permissions `json:"permissions"`
}

// Permissions is the effective permission set computed by the policy.
type Permissions struct {
	ReadOnly   bool            `json:"read_only"`
	Privileges []string        `json:"privileges"`
	Token      []string        `json:"token"`
	Routes     map[string]bool `json:"routes"`
}

// orUTC is an account's time zone as /me shows it: UTC for a principal
// loaded without one.
func orUTC(tz string) string {
	if tz == "" {
		return "UTC"
	}
	return tz
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// getMe answers GET /me: the caller's account and its effective permissions.
func (s *Server) getMe(c fuego.ContextNoBody) (*Envelope[Account], error) {
	if err := noParams(c.Request().URL.RawQuery); err != nil {
		return nil, err
	}
	ctx := c.Context()
	cl, ok := callFrom(ctx)
	if !ok {
		return nil, fmt.Errorf("getMe: no authenticated call in context")
	}
	p, err := s.cfg.Policy.Permissions(ctx, cl.input)
	if err != nil {
		return nil, err
	}
	perms := Permissions{ReadOnly: p.ReadOnly, Privileges: p.Privileges, Token: p.Token, Routes: p.Routes}
	a := cl.principal.Account
	out := Account{
		ID:            a.ID,
		Username:      a.Username,
		Email:         a.Email,
		ManagerID:     a.ManagerID,
		Type:          string(a.Type),
		Active:        boolString(a.Active),
		AccountExpire: boolString(a.AccountExpire),
		Timezone:      orUTC(a.Timezone),
		Permissions:   perms,
	}
	if !a.ExpireDate.IsZero() {
		out.AccountExpireDt = a.ExpireDate.Format("2006-01-02")
	}
	return &Envelope[Account]{Data: out}, nil
}

// accountSchema is the Account component (its permissions are the
// Permissions component).
func accountSchema() wireType {
	return wireType{name: "Account", value: Account{}, description: "The authenticated account (docs/api.md §7).", fields: map[string][]fieldOpt{
		"id":                {desc("Account id."), minimum(1)},
		"username":          {desc("Login name of the account.")},
		"email":             {desc("E-mail address of the account, or empty.")},
		"manager_id":        {minimum(0)},
		"type":              {enum("admin", "manager", "user", "subaccount"), desc("Place of the account in the account tree.")},
		"active":            {enum("true", "false"), desc(`"true" when the account may use the API.`)},
		"account_expire":    {enum("true", "false"), desc(`"true" when the account expires on account_expire_dt.`)},
		"account_expire_dt": {pattern(`^([0-9]{4}-[0-9]{2}-[0-9]{2})?$`)},
		"timezone":          {desc(`The IANA time zone in which the account's event rules read week_days and day_time (docs/design.md §14), for example "Europe/Paris"; an extra field beyond the spec's.`)},
		"permissions":       {ref("Permissions")},
	}, uses: []wireType{{name: "Permissions", value: Permissions{},
		description: "The effective permission set of the token and its account, computed by the policy.",
		fields: map[string][]fieldOpt{
			"read_only":  {desc("Whether the account is read-only (no write route is allowed).")},
			"privileges": {itemEnum("event_notifications", "reports"), desc("Privileges the account holds (users, managers and admins hold all).")},
			"token":      {desc("The token's permissions, as granted: `*`, `GET *` or `METHOD /route`.")},
			"routes":     {desc(`Whether each route ("METHOD /route") is allowed for this token and account.`)},
		}}}}
}

// exampleAccount is the example of GET /me: a user whose token may do
// everything (its routes are every operation of the document, which
// TestOpenAPIMeExampleRoutes checks).
func exampleAccount() Account {
	return Account{ID: 4, Username: "acme", Email: "ops@acme.example", ManagerID: 3, Type: "user",
		Active: "true", AccountExpire: "false", Timezone: "Europe/Paris", Permissions: Permissions{
			ReadOnly: false, Privileges: []string{"event_notifications", "reports"}, Token: []string{"*"},
			Routes: exampleRoutes(),
		}}
}

// exampleRoutes is every route of the API, allowed: what a "*" token of a
// writable user sees (from tenancy.Routes, so a new route is in it).
func exampleRoutes() map[string]bool {
	out := map[string]bool{}
	for _, r := range tenancy.Routes() {
		out[r.String()] = true
	}
	return out
}
