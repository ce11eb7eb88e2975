package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
)

// Bounds of GET /objects/{id}/positions (docs/design.md §14).
const (
	maxPositionsSpan        = 31 * 24 * time.Hour
	defaultPositionsSpan    = 24 * time.Hour
	maxPositionsPerPage     = 500
	defaultPositionsPerPage = 100
)

// registerPositions declares GET /objects/{id}/positions.
func (s *Server) registerPositions(g *fuego.Server) {
	fuego.Get(g, "/objects/{id}/positions", s.getPositions, routeOptions(
		authErrors(), errorResponses(http.StatusNotFound),
		[]fuego.RouteOption{
			fuego.OptionOperationID("get_object_positions"), fuego.OptionTags("Fleet"),
			fuego.OptionSummary("A device's position history"),
			fuego.OptionDescription("The stored readings of one device of the caller's data scope (a subaccount: a device granted to it; " +
				"404 otherwise, the same as a device that does not exist), time ascending, from (inclusive) to to (exclusive), at most " +
				"31 days apart: to defaults to one day after from, or now without from; from to one day before to. A page holds at most per_page positions; a full page " +
				"may have more after it: pass its last time as after. Kept for the positions retention. Needs the token permission " +
				"GET /objects/{id}/positions."),
			fuego.OptionQuery("from", "RFC 3339: the first instant (inclusive); default: one day before to."),
			paramSchema(openapi3.ParameterInQuery, "from", dateTimeParam),
			fuego.OptionQuery("to", "RFC 3339: the end (exclusive); default: one day after from, or now."),
			paramSchema(openapi3.ParameterInQuery, "to", dateTimeParam),
			fuego.OptionQueryInt(paramPerPage, "Positions per page, 1 to 500.", fuego.ParamDefault(defaultPositionsPerPage)),
			paramSchema(openapi3.ParameterInQuery, paramPerPage, func(s *openapi3.Schema) {
				s.WithFormat("int32").WithMin(1).WithMax(maxPositionsPerPage)
			}),
			fuego.OptionQuery(paramAfter, "RFC 3339: the time of the previous page's last position (keyset paging)."),
			paramSchema(openapi3.ParameterInQuery, paramAfter, dateTimeParam),
			respondsList(positionSchema(), []storage.Position{examplePosition()}),
		}, pathID("id", "Device id.", exampleObject().ID))...)
}

// getPositions answers GET /objects/{id}/positions.
func (s *Server) getPositions(c fuego.ContextNoBody) (*Envelope[[]storage.Position], error) {
	id, err := idParam(c)
	if err != nil {
		return nil, err
	}
	q, perr := parseQuery(c.Request().URL.RawQuery)
	if perr != nil {
		return nil, perr
	}
	req := storage.PositionsRequest{ObjectID: id, PerPage: defaultPositionsPerPage}
	instant := func(name string) (*time.Time, error) {
		vs, ok := q[name]
		if !ok {
			return nil, nil
		}
		if len(vs) != 1 {
			return nil, invalidParam(name, "given more than once")
		}
		t, err := storage.ParseTimestamp(vs[0])
		if err != nil {
			return nil, invalidParam(name, "must be an RFC 3339 date and time (YYYY-MM-DDTHH:MM:SS[.ffffff] and Z or ±HH:MM)")
		}
		return &t, nil
	}
	for name := range q {
		switch name {
		case "from", "to", paramPerPage, paramAfter:
		default:
			return nil, invalidParam(name, "unknown parameter")
		}
	}
	from, err := instant("from")
	if err != nil {
		return nil, err
	}
	to, err := instant("to")
	if err != nil {
		return nil, err
	}
	if req.After, err = instant(paramAfter); err != nil {
		return nil, err
	}
	if vs, ok := q[paramPerPage]; ok {
		if len(vs) != 1 {
			return nil, invalidParam(paramPerPage, "given more than once")
		}
		n, perr := parseInt(paramPerPage, vs[0], 1, maxPositionsPerPage)
		if perr != nil {
			return nil, perr
		}
		req.PerPage = int(n)
	}
	switch {
	case to != nil:
		req.To = *to
	case from != nil:
		req.To = from.Add(defaultPositionsSpan)
	default:
		req.To = s.cfg.Now()
	}
	req.From = req.To.Add(-defaultPositionsSpan)
	if first := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC); req.From.Before(first) {
		req.From = first // PostgreSQL's timestamps start at year 1 here too
	}
	if from != nil {
		req.From = *from
	}
	switch {
	case req.From.After(req.To):
		return nil, invalidParam("from", "must not be after to")
	case req.To.Sub(req.From) > maxPositionsSpan:
		return nil, invalidParam("to", "at most 31 days after from")
	}
	ctx := c.Context()
	scope, err := s.scopeFor(ctx, storage.Objects.Resource())
	if err != nil {
		return nil, err
	}
	page, _, err := s.cfg.Store.Positions(ctx, scope, req)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, newError(CodeNotFound, "device not found", nil)
	}
	if err != nil {
		return nil, err
	}
	return &Envelope[[]storage.Position]{Data: page}, nil
}

// positionSchema is the Position component.
func positionSchema() wireType {
	return wireType{name: "Position", value: storage.Position{}, description: "A stored reading of a device (docs/design.md §14); null: not reported.",
		fields: map[string][]fieldOpt{
			"time":         {typed(openapi3.TypeString), format("date-time"), desc("The reading's time.")},
			"lat":          {desc("Latitude (degrees).")},
			"lon":          {desc("Longitude (degrees).")},
			"speed":        {desc("Speed (km/h).")},
			"heading":      {desc("Heading (degrees).")},
			"altitude":     {desc("Altitude (m).")},
			"odometer":     {desc("Odometer (km) as reported.")},
			"engine_hours": {desc("Engine hours (h) as reported.")},
			"ignition":     {desc("Ignition on.")},
			"attributes":   {freeObject(), desc("The reading's attributes.")},
		}}
}

func examplePosition() storage.Position {
	return storage.Position{Time: time.Date(2027, 3, 1, 8, 15, 0, 0, time.UTC), Lat: ptr(38.7223), Lon: ptr(-9.1393), Speed: ptr(87.5),
		Heading: ptr(270.0), Odometer: ptr(120351.4), Ignition: ptr(true), Attributes: map[string]any{"fuel": 61.5}}
}

// dateTimeParam declares a query parameter an RFC 3339 date and time
// as storage.ParseTimestamp reads it.
func dateTimeParam(s *openapi3.Schema) { timestampSchema(s) }
