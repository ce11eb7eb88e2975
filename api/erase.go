package api

import (
	"errors"
	"net/http"

	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
)

// registerErase declares DELETE /accounts/{id} (docs/design.md §12): the
// offboarding of a tenant.
func (s *Server) registerErase(g *fuego.Server) {
	fuego.Delete(g, "/accounts/{id}", s.deleteAccount, routeOptions(oneErrors(),
		[]fuego.RouteOption{
			fuego.OptionOperationID("erase_account"), fuego.OptionTags("Account"),
			fuego.OptionSummary("Erase an account and everything below it"),
			fuego.OptionDescription("Deletes, in one transaction, the account and its subtree (the accounts below it, their devices, " +
				"grants, tokens, service records, reports, event rules and passengers), and answers 204 once their tokens are refused " +
				"on every server. An admin erases any account but an admin, a manager its users and their subaccounts, a user its " +
				"subaccounts; never one's own account (403 MANAGEMENT_DENIED own_account) nor an admin (wrong_target_type). One " +
				"account.erase audit event records the counts; earlier events keep no username or e-mail of the erased accounts. " +
				"Any other id, and an erased one, is 404. Needs the token permission DELETE /accounts/{id} and write access."),
			fuego.OptionDefaultStatusCode(http.StatusNoContent),
			respondsNoContent(),
		}, pathID("id", "Account id.", exampleManagedAccount().ID))...)
}

// deleteAccount answers DELETE /accounts/{id}: 204 once the subtree is
// erased and its tokens refused on every replica.
func (s *Server) deleteAccount(c fuego.ContextNoBody) (any, error) {
	ctx := c.Context()
	id, m, err := s.managedID(c)
	if err != nil {
		return nil, err
	}
	_, target, err := s.target(ctx, m, id)
	if err != nil {
		return nil, err
	}
	if err := s.decideManagement(ctx, m, policy.ActionAccountErase, target, map[string]any{}); err != nil {
		return nil, err
	}
	if _, err := s.cfg.Store.EraseManagedAccount(ctx, m.scope, actor(ctx, m), id); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, newError(CodeNotFound, "account not found", nil)
		}
		return nil, err
	}
	s.authChanged(ctx)
	c.Response().Header().Del("Content-Type")
	return nil, nil
}
