package api

import (
	"encoding/json"
	"fmt"

	"github.com/go-fuego/fuego"
)

// Account is the wire form of the authenticated account (spec §2.2,
// DESIGN §5).
type Account struct {
	ID        int64  `json:"id"`
	Username  string `json:"username"`
	Email     string `json:"email" format:"email"`
	ManagerID int64  `json:"manager_id" description:"The managing account (a subaccount's parent user); 0 when none."`
	Type      string `json:"type" enum:"admin,manager,user,subaccount"`
	// Active and AccountExpire are the strings "true" and "false".
	Active          string      `json:"active" enum:"true,false"`
	AccountExpire   string      `json:"account_expire" enum:"true,false"`
	AccountExpireDt string      `json:"account_expire_dt" description:"YYYY-MM-DD, or empty when the account has no expiry date."`
	Permissions     Permissions `json:"permissions"`
}

// Permissions is the effective permission set computed by the policy.
type Permissions struct {
	ReadOnly   bool            `json:"read_only"`
	Privileges []string        `json:"privileges"`
	Token      []string        `json:"token"`
	Routes     map[string]bool `json:"routes"`
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
	raw, err := s.cfg.Policy.Permissions(ctx, cl.input)
	if err != nil {
		return nil, err
	}
	var perms Permissions
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &perms); err != nil {
		return nil, fmt.Errorf("getMe: policy permissions: %w", err)
	}
	a := cl.principal.Account
	out := Account{
		ID:            a.ID,
		Username:      a.Username,
		Email:         a.Email,
		ManagerID:     a.ManagerID,
		Type:          string(a.Type),
		Active:        boolString(a.Active),
		AccountExpire: boolString(a.AccountExpire),
		Permissions:   perms,
	}
	if !a.ExpireDate.IsZero() {
		out.AccountExpireDt = a.ExpireDate.Format("2006-01-02")
	}
	return &Envelope[Account]{Data: out}, nil
}
