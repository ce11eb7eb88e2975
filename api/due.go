package api

import (
	"github.com/go-fuego/fuego"
)

// maxDue is the most due records GET /services/due returns (spec §4.5).
const maxDue = 500

// getServicesDue answers GET /services/due: the caller's due maintenance
// records, newest service first, at most 500, computed for today (UTC).
func (s *Server) getServicesDue(c fuego.ContextNoBody) (*Envelope[[]DueService], error) {
	if err := noParams(c.Request().URL.RawQuery); err != nil {
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
	return &Envelope[[]DueService]{Data: dueServices(rows)}, nil
}
