package api

import (
	"context"
	"fmt"

	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
)

// paging returns the meta paging of a list response; pages is
// ceil(total / per_page).
func paging(req storage.ListRequest, total int64) *Paging {
	per := int64(req.PerPage)
	return &Paging{Page: req.Page, PerPage: req.PerPage, Total: total, Pages: (total + per - 1) / per}
}

// scopeFor returns the caller's row scope of resource from the policy.
func (s *Server) scopeFor(ctx context.Context, resource string) (policy.RowScope, error) {
	cl, ok := callFrom(ctx)
	if !ok {
		return policy.RowScope{}, fmt.Errorf("no authenticated call in context")
	}
	return s.cfg.Policy.Scope(ctx, cl.input, resource)
}

// listOf runs one list endpoint: parse the typed list request, get the
// scope from the policy, query, and wrap the page in the envelope.
func listOf[T, W any](c fuego.ContextNoBody, s *Server, l storage.Listing,
	query func(context.Context, policy.RowScope, storage.ListRequest) (storage.Page[T], error),
	wire func([]T) []W,
) (*Envelope[[]W], error) {
	ctx := c.Context()
	req, err := parseListRequest(c.Request().URL.RawQuery, l)
	if err != nil {
		return nil, err
	}
	scope, err := s.scopeFor(ctx, l.Resource)
	if err != nil {
		return nil, err
	}
	page, err := query(ctx, scope, req)
	if err != nil {
		return nil, err
	}
	return &Envelope[[]W]{Data: wire(page.Items), Meta: Meta{Paging: paging(req, page.Total)}}, nil
}

func same[T any](rows []T) []T { return rows }

// getServices answers GET /services.
func (s *Server) getServices(c fuego.ContextNoBody) (*Envelope[[]Service], error) {
	return listOf(c, s, storage.ServiceListing(), s.cfg.Store.ListServices, services)
}

// getReports answers GET /reports.
func (s *Server) getReports(c fuego.ContextNoBody) (*Envelope[[]storage.Report], error) {
	return listOf(c, s, storage.ReportListing(), s.cfg.Store.ListReports, same[storage.Report])
}

// getEvents answers GET /events.
func (s *Server) getEvents(c fuego.ContextNoBody) (*Envelope[[]storage.Event], error) {
	return listOf(c, s, storage.EventListing(), s.cfg.Store.ListEvents, same[storage.Event])
}
