package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"slices"

	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/places"
	"github.com/fleetapi/fleetapi/storage"
)

// ZoneInput is the body of POST /zones and PATCH /zones/{id}
// (docs/design.md §15, Places). On a create, name and kind are required
// with the kind's geometry (a circle: center and radius_m; a polygon:
// points) and color defaults to empty; a PATCH names at least one field,
// none null.
type ZoneInput struct {
	Name    *string        `json:"name,omitempty"`
	Kind    *string        `json:"kind,omitempty"`
	Center  *places.Point  `json:"center,omitempty"`
	RadiusM *float64       `json:"radius_m,omitempty"`
	Points  []places.Point `json:"points,omitempty"`
	Color   *string        `json:"color,omitempty"`
}

// zoneFaults adds the body's text faults to the fields of err (a
// storage.InvalidFields or nil) and returns the one VALIDATION_FAILED, or
// err when it is of another kind.
func zoneFaults(err error, faults textFaults) error {
	var bad storage.InvalidFields
	if err != nil && !errors.As(err, &bad) {
		return err
	}
	fields := map[string]any{}
	for f, reason := range bad {
		fields[f] = reason
	}
	for f, reason := range faults {
		fields[f] = reason
	}
	if len(fields) == 0 {
		return nil
	}
	return newError(CodeValidationFailed, "the zone is not valid", map[string]any{"fields": fields})
}

// zoneCreateFrom checks the body of POST /zones into the zone stored
// (storage.CheckZone, once).
func zoneCreateFrom(in ZoneInput, faults textFaults) (storage.CheckedZone, error) {
	v := storage.ZoneValue{Name: str(in.Name), Kind: str(in.Kind), Center: in.Center, RadiusM: in.RadiusM,
		Points: in.Points, Color: str(in.Color)}
	cz, err := storage.CheckZone(v)
	if err := zoneFaults(err, faults); err != nil {
		return cz, err
	}
	return cz, nil
}

// postZones answers POST /zones: 201 with the zone, owned by the caller's
// account (subaccounts write no zone: the policy refuses them first).
func (s *Server) postZones(c fuego.ContextWithBody[ZoneInput]) (*Envelope[storage.Zone], error) {
	ctx := c.Context()
	// The body is read once and decoded twice: strictly (validBody) and
	// for the geometry it names null (absent is what the other kind's
	// fields are; null is refused, as the schema says).
	r := c.Request()
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	validate := func(in ZoneInput, faults textFaults) (storage.CheckedZone, error) {
		var present map[string]json.RawMessage
		if json.Unmarshal(body, &present) == nil {
			for _, key := range []string{"center", "radius_m"} {
				if string(present[key]) == "null" {
					if faults == nil {
						faults = textFaults{}
					}
					faults[key] = "must not be null"
				}
			}
		}
		return zoneCreateFrom(in, faults)
	}
	o, err := managementWrite[ZoneInput, storage.CheckedZone]{validate: validate, create: "POST /zones"}.open(s, ctx, r)
	if err != nil {
		return nil, err
	}
	scope, err := s.scopeFor(ctx, storage.Zones.Resource())
	if err != nil {
		return nil, err
	}
	created, replayed, err := s.cfg.Store.CreateZone(ctx, scope, actor(ctx, o.manager), o.principal.Account.ID, o.value, o.idem)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, newError(CodeInvalidToken, "the caller's account was erased: its tokens no longer authenticate", nil)
	case err != nil:
		return nil, writeError(err, "conflict", "name")
	}
	return createdEnvelope(c, created, replayed), nil
}

// getZone answers GET /zones/{id}.
func (s *Server) getZone(c fuego.ContextNoBody) (*Envelope[storage.Zone], error) {
	id, err := idParamOnly(c)
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, err := s.scopeFor(ctx, storage.Zones.Resource())
	if err != nil {
		return nil, err
	}
	z, err := s.cfg.Store.ZoneByID(ctx, scope, id)
	if err != nil {
		return nil, notFoundAs("zone", err)
	}
	return &Envelope[storage.Zone]{Data: z}, nil
}

// patchZone answers PATCH /zones/{id}: 200 with the zone. The changed zone
// is checked whole, in the transaction that writes it.
func (s *Server) patchZone(c fuego.ContextWithBody[ZoneInput]) (*Envelope[storage.Zone], error) {
	id, err := idParamOnly(c)
	if err != nil {
		return nil, err
	}
	// The body is read once and decoded twice: strictly (validBody) and
	// for the keys it names (a PATCH names at least one, none null).
	r := c.Request()
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	in, err := validBody(r, func(in ZoneInput, faults textFaults) (ZoneInput, error) {
		var present map[string]json.RawMessage
		if err := json.Unmarshal(body, &present); err != nil {
			return in, invalidBody("not valid JSON", nil)
		}
		if len(present) == 0 {
			return in, newError(CodeValidationFailed, "the zone is not valid",
				map[string]any{"fields": map[string]any{"body": "name at least one of name, kind, center, radius_m, points, color"}})
		}
		v := validation{}
		for _, key := range slices.Sorted(maps.Keys(present)) {
			if string(present[key]) == "null" {
				v[key] = "must not be null"
			}
		}
		for f, reason := range faults {
			v[f] = reason
		}
		return in, v.err("the zone")
	})
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, err := s.scopeFor(ctx, storage.Zones.Resource())
	if err != nil {
		return nil, err
	}
	cl, ok := callFrom(ctx)
	if !ok {
		return nil, errors.New("patchZone: no authenticated call in context")
	}
	p := storage.ZonePatch{Name: in.Name, Kind: in.Kind, Center: in.Center, RadiusM: in.RadiusM, Points: in.Points, Color: in.Color}
	z, err := s.cfg.Store.UpdateZone(ctx, scope, actor(ctx, manager{call: cl}), id, p)
	if err != nil {
		if errors.Is(err, storage.ErrInvalid) {
			return nil, zoneFaults(err, nil)
		}
		return nil, notFoundAs("zone", err)
	}
	return &Envelope[storage.Zone]{Data: z}, nil
}

// deleteZone answers DELETE /zones/{id}: 204, or 409 CONFLICT naming the
// event rules of the zone's account that name it (details.event_ids).
func (s *Server) deleteZone(c fuego.ContextNoBody) (any, error) {
	id, err := idParamOnly(c)
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, err := s.scopeFor(ctx, storage.Zones.Resource())
	if err != nil {
		return nil, err
	}
	cl, ok := callFrom(ctx)
	if !ok {
		return nil, errors.New("deleteZone: no authenticated call in context")
	}
	err = s.cfg.Store.DeleteZone(ctx, scope, actor(ctx, manager{call: cl}), id)
	var inUse *storage.ZoneInUse
	switch {
	case errors.As(err, &inUse):
		return nil, newError(CodeConflict, "event rules name the zone: take it out of their zones first",
			map[string]any{"event_ids": inUse.EventIDs})
	case err != nil:
		return nil, notFoundAs("zone", err)
	}
	c.Response().Header().Del("Content-Type")
	return nil, nil
}
