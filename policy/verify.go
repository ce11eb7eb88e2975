package policy

import (
	"context"
	"errors"
	"fmt"
)

// samplePrincipal is an active principal of the given account type with
// every privilege, used to check the policy at start-up.
func samplePrincipal(accountType string) Input {
	in := Input{
		Request: RequestInput{Method: "GET", Route: "/me"},
		Token:   TokenInput{ID: 1, Permissions: []string{"*"}},
		Account: AccountInput{
			ID: 7, Type: accountType, ManagerID: 3, Active: true,
			Privileges: []string{"reports", "event_notifications"}, ChainComplete: true,
		},
	}
	if accountType == "admin" {
		in.Account.ManagerID = 0
	}
	return in
}

// accountTypes are the account types of docs/design.md §2.
func accountTypes() []string { return []string{"admin", "manager", "user", "subaccount"} }

// verify checks, for a sample principal of every account type, that the
// decision and permissions are well formed and that every scope rule
// compiles into a Scope that the schema accepts (Schema.CheckScope), and
// that only admins get an unrestricted one; and the same of the
// management decision and scope (verifyManagement).
func (e *snapshot) verify(ctx context.Context) error {
	for _, t := range accountTypes() {
		in := samplePrincipal(t)
		rs, err := e.decideQ.Eval(ctx, evalInput(in))
		if err != nil {
			return fmt.Errorf("decision for %s principal: %w", article(t), err)
		}
		if _, err := decisionFrom(rs); err != nil {
			return fmt.Errorf("decision for %s principal: %w", article(t), err)
		}
		rs, err = e.permissionsQ.Eval(ctx, evalInput(in))
		if err != nil {
			return fmt.Errorf("permissions for %s principal: %w", article(t), err)
		}
		if _, ok := single(rs).(map[string]any); !ok {
			return fmt.Errorf("permissions for %s principal: %w", article(t), ErrUndefined)
		}
		for _, r := range e.resources {
			scope, err := e.compileScope(ctx, scopeInput{Account: in.Account}, r)
			if err == nil && t != "admin" && scope.unrestricted {
				err = errors.New("unrestricted for a principal that is not an admin")
			}
			if err == nil {
				err = e.enforceable(scope)
			}
			if err != nil {
				return fmt.Errorf("scope rule %q for %s principal: %w", r, article(t), err)
			}
		}
		if err := e.verifyManagement(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// article prefixes an account type with "a" or "an".
func article(accountType string) string {
	if accountType == "admin" {
		return "an admin"
	}
	return "a " + accountType
}

// enforceable asks the schema whether scope can be enforced
// (Schema.CheckScope); a refusal is an error wrapping ErrScope.
func (e *snapshot) enforceable(scope Scope) error {
	if e.checkScope == nil {
		return nil
	}
	if err := e.checkScope(scope); err != nil {
		return fmt.Errorf("%w: %q rejected by the storage check: %w", ErrScope, scope.resource, err)
	}
	return nil
}
