package api

import (
	"strconv"

	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
)

// getEvent answers GET /events/{id}. A rule outside the caller's scope is
// NOT_FOUND, exactly like one that does not exist.
func (s *Server) getEvent(c fuego.ContextNoBody) (*Envelope[storage.Event], error) {
	raw := c.PathParam("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return nil, invalidParam("id", "must be an integer")
	}
	if id < 1 {
		return nil, invalidParam("id", "must be at least 1")
	}
	if err := noParams(c.Request().URL.Query()); err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, err := s.scopeFor(ctx, "events")
	if err != nil {
		return nil, err
	}
	ev, err := s.cfg.Store.EventByID(ctx, scope, id)
	if err != nil {
		return nil, err
	}
	return &Envelope[storage.Event]{Data: ev}, nil
}
