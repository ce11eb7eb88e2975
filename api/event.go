package api

import (
	"math"

	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
)

// getEvent answers GET /events/{id}. A rule outside the caller's scope is
// NOT_FOUND, exactly like one that does not exist.
func (s *Server) getEvent(c fuego.ContextNoBody) (*Envelope[storage.Event], error) {
	id, perr := parseInt("id", c.PathParam("id"), 1, math.MaxInt64)
	if perr != nil {
		return nil, perr
	}
	if err := noParams(c.Request().URL.RawQuery); err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, err := s.scopeFor(ctx, storage.Events.Resource())
	if err != nil {
		return nil, err
	}
	ev, err := s.cfg.Store.EventByID(ctx, scope, id)
	if err != nil {
		return nil, err
	}
	return &Envelope[storage.Event]{Data: ev}, nil
}
