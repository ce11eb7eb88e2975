package api

import (
	"context"

	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/policy"
)

// registerErase declares DELETE /accounts/{id} (docs/design.md §12): the
// offboarding of a tenant.
func (s *Server) registerErase(g *fuego.Server) {
	s.revocationRoute(g, "/accounts/{id}", "account", s.eraseAccount, []fuego.RouteOption{
		fuego.OptionOperationID("erase_account"), fuego.OptionTags("Account"),
		fuego.OptionSummary("Erase an account and everything below it"),
		fuego.OptionDescription("Deletes, in one transaction, the account and its subtree (the accounts below it, their devices, " +
			"grants, tokens, service records, reports, event rules and passengers), and answers 204 once their tokens are refused " +
			"on every server. An admin erases any account but an admin, a manager its users and their subaccounts, a user its " +
			"subaccounts; never one's own account (403 MANAGEMENT_DENIED own_account) nor an admin (wrong_target_type). One " +
			"account.erase audit event records the counts; earlier events keep their ids and no value naming what was erased " +
			"(usernames, e-mails, device names and IMEIs, token names), stored responses of keyed creates that name it are " +
			"deleted whoever sent them, and the usage it was served stays (billing data, GET /usage and the export). " +
			"Any other id, and an erased one, is 404. Needs the token permission DELETE /accounts/{id} and write access."),
	}, pathID("id", "Account id.", exampleManagedAccount().ID))
}

// eraseAccount is the write of DELETE /accounts/{id}: the subtree of the
// account id in m's management scope, erased once the management decision
// allows it.
func (s *Server) eraseAccount(ctx context.Context, m manager, id int64) error {
	_, target, err := s.target(ctx, m, id)
	if err != nil {
		return err
	}
	if err := s.decideManagement(ctx, m, policy.ActionAccountErase, target, map[string]any{}); err != nil {
		return err
	}
	_, err = s.cfg.Store.EraseManagedAccount(ctx, m.scope, actor(ctx, m), id)
	return err
}
