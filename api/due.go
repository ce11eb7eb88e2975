package api

import (
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
)

// maxDue is the most due records GET /services/due returns (spec §4.5).
const maxDue = 500

// getServicesDue answers GET /services/due: the caller's due maintenance
// records, newest service first, at most 500, computed for today (UTC).
func (s *Server) getServicesDue(c fuego.ContextNoBody) (*Envelope[[]storage.DueService], error) {
	if err := noParams(c.Request().URL.Query()); err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, err := s.scopeFor(ctx, "services")
	if err != nil {
		return nil, err
	}
	rows, err := s.cfg.Store.DueServices(ctx, scope, s.cfg.Now().UTC(), maxDue)
	if err != nil {
		return nil, err
	}
	if rows == nil {
		rows = []storage.DueService{}
	}
	return &Envelope[[]storage.DueService]{Data: rows}, nil
}
