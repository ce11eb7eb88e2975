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

// listMeta is the meta of a page of list (its path below the base path,
// with its parameters), a list of d, for the request req: its paging, and
// the cursor after it when next is not nil.
func listMeta(d *storage.Descriptor, list string, req storage.ListRequest, total int64, next *storage.Cursor) (Meta, error) {
	p := paging(req, total)
	if next != nil {
		var err error
		if p.Next, err = encodeCursor(string(d.Resource()), list, req, next); err != nil {
			return Meta{}, err
		}
	}
	return Meta{Paging: p}, nil
}

// scopeFor returns the caller's row scope of resource from the policy.
func (s *Server) scopeFor(ctx context.Context, resource policy.Resource) (policy.Scope, error) {
	cl, ok := callFrom(ctx)
	if !ok {
		return policy.Scope{}, fmt.Errorf("no authenticated call in context")
	}
	return s.cfg.Policy.Scope(ctx, cl.input, resource)
}

// listRoute registers GET /<resource>, the list of a resource, from its
// descriptor: the handler parses the query with the descriptor, gets the
// caller's scope, runs storage.List and wraps the page in the envelope
// (wire turns the rows into their wire form); the OpenAPI parameters come
// from the descriptor too (listParams), between the error responses errs
// and the operation's own options opts: its operationId, tag, summary and
// description, and respondsPage(<the wire type's schema>, <example items>).
func listRoute[T, W any](g *fuego.Server, s *Server, m storage.Model[T], wire func([]T) []W, errs, opts []fuego.RouteOption) {
	scope := func(ctx context.Context) (policy.Scope, error) { return s.scopeFor(ctx, m.Resource()) }
	path := "/" + string(m.Resource())
	fuego.Get(g, path, listHandler(s, path, m, wire, nil, scope), routeOptions(errs, listParams(m.Descriptor, path), opts)...)
}

// listHandler is the handler of the list at path (below the base path,
// without path parameters; its cursors belong to it): it parses the query
// with m's descriptor, lets adjust (when not nil) refine the request from the raw
// query, gets the caller's scope, runs storage.List and wraps the page,
// turned into its wire form, in the envelope.
func listHandler[T, W any](s *Server, path string, m storage.Model[T], wire func([]T) []W, adjust func(raw string, req *storage.ListRequest) error,
	scope func(context.Context) (policy.Scope, error)) func(fuego.ContextNoBody) (*Envelope[[]W], error) {
	return func(c fuego.ContextNoBody) (*Envelope[[]W], error) {
		ctx := c.Context()
		raw := c.Request().URL.RawQuery
		req, after, err := parseList(raw, m.Descriptor)
		if err != nil {
			return nil, err
		}
		if adjust != nil {
			if err := adjust(raw, &req); err != nil {
				return nil, err
			}
		}
		if after != nil {
			// After adjust: the cursor is checked against the order the
			// list is really in (GET /audit-events: at, newest first).
			if err := applyCursor(&req, after, path); err != nil {
				return nil, err
			}
		}
		sc, err := scope(ctx)
		if err != nil {
			return nil, err
		}
		page, err := storage.List(ctx, s.cfg.Store, sc, m, req)
		if err != nil {
			return nil, err
		}
		meta, err := listMeta(m.Descriptor, path, req, page.Total, page.Next)
		if err != nil {
			return nil, err
		}
		return &Envelope[[]W]{Data: wire(page.Items), Meta: meta}, nil
	}
}

func same[T any](rows []T) []T { return rows }

// wireRows turns rows into their wire form, one by one.
func wireRows[T, W any](rows []T, wire func(T) W) []W {
	out := make([]W, len(rows))
	for i, r := range rows {
		out[i] = wire(r)
	}
	return out
}
