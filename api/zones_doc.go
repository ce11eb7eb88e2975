package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/places"
	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
)

// zoneAccess is what every zone operation says of its access.
const zoneAccess = "; a subaccount reads its parent's zones with the event_notifications privilege and never writes one."

// zoneShapeRules says what makes a zone's shape valid (places.Compile).
var zoneShapeRules = fmt.Sprintf("WGS84 degrees on a sphere of radius %.1f m (the mean Earth radius); edges are geodesics. "+
	"A circle: center and radius_m (%d to %d m). A polygon: points, a closed ring (the last point equal to the first) of %d to %d "+
	"points, each lat -90..90 and lon -180..180, no point repeating the one before, not self-intersecting, enclosing at least %g m²; "+
	"either winding means the smaller of the two regions the ring bounds (at most a hemisphere). The antimeridian and the poles "+
	"need nothing special.", places.EarthRadiusM, places.MinRadiusM, places.MaxRadiusM, places.MinPoints, places.MaxPoints, float64(places.MinAreaM2))

// registerZones declares the /zones routes (docs/design.md §15, Places).
func (s *Server) registerZones(g *fuego.Server) {
	path := "/" + string(storage.Zones.Resource())
	one := func(name string) []fuego.RouteOption { return pathID(name, "Zone id.", exampleZone().ID) }
	scope := func(ctx context.Context) (policy.Scope, error) { return s.scopeFor(ctx, storage.Zones.Resource()) }
	fuego.Get(g, path, listHandler(s, path, storage.Zones, same[storage.Zone], nil, scope),
		routeOptions(authErrors(), listParams(storage.Zones.Descriptor, path), []fuego.RouteOption{
			fuego.OptionOperationID("get_zones"), fuego.OptionTags("Events"),
			fuego.OptionSummary("Paged list of zones"),
			fuego.OptionDescription("The zones the caller may see: an admin every zone, a manager or user those of its own account and " +
				"of the accounts it manages. Needs the token permission GET /zones" + zoneAccess),
			respondsPage(zoneSchema(), []storage.Zone{exampleZone()}),
		})...)
	fuego.Post(g, path, s.postZones, routeOptions(writeErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("create_zone"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Draw a zone"),
		fuego.OptionDescription("Creates a zone of the caller's account, counted against its zones quota (403 QUOTA_EXCEEDED). " +
			zoneShapeRules + " A field that fails is named in details.fields (\"points[3].lat\"). Audited (zone.create). Event rules " +
			"of type zone_in and zone_out name zones by id in their zones. Needs the token permission POST /zones and write access" + zoneAccess),
		idempotentCreate("Makes a retried create return the first response; the same key with another body is 409 IDEMPOTENCY_KEY_REUSED."),
		takesBody(zoneInputSchema(), exampleZoneInput()),
		respondsOne(zoneSchema(), exampleZone()),
	})...)
	fuego.Get(g, path+"/{id}", s.getZone, routeOptions(oneErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("get_zone"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Read one zone"),
		fuego.OptionDescription("One zone by id. A zone outside the caller's scope is 404, like one that does not exist. " +
			"Needs the token permission GET /zones/{id}" + zoneAccess),
		respondsOne(zoneSchema(), exampleZone()),
	}, one("id"))...)
	fuego.Patch(g, path+"/{id}", s.patchZone, routeOptions(changeErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("update_zone"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Change a zone"),
		fuego.OptionDescription("Changes name, color or the shape (at least one field, none null). A new kind drops the old kind's " +
			"geometry, so a circle made a polygon needs points; the changed zone is checked whole. " + zoneShapeRules +
			" Audited (zone.update). Needs the token permission PATCH /zones/{id} and write access" + zoneAccess),
		takesBody(zonePatchSchema(), ZoneInput{Name: ptr("Depot, north gate")}),
		respondsOne(zoneSchema(), exampleZone()),
	}, one("id"))...)
	fuego.Delete(g, path+"/{id}", s.deleteZone, routeOptions(oneErrors(), errorResponses(http.StatusConflict), []fuego.RouteOption{
		fuego.OptionOperationID("delete_zone"), fuego.OptionTags("Events"),
		fuego.OptionSummary("Delete a zone"),
		fuego.OptionDescription("Deletes the zone: 204. A zone that event rules of its account name is kept: 409 CONFLICT with " +
			"details.event_ids (take it out of their zones first). Audited (zone.delete). Needs the token permission " +
			"DELETE /zones/{id} and write access" + zoneAccess),
		fuego.OptionDefaultStatusCode(http.StatusNoContent), respondsNoContent(),
	}, one("id"))...)
}

// pointSchema is the Point component: a position in WGS84 degrees.
func pointSchema() wireType {
	return wireType{name: "Point", value: places.Point{}, description: "A position in WGS84 degrees.", fields: map[string][]fieldOpt{
		"lat": {desc("Latitude, -90 to 90."), minimum(-90), maximum(90)},
		"lon": {desc("Longitude, -180 to 180."), minimum(-180), maximum(180)},
	}}
}

// centerOpt is the schema of a zone's center: a Point inline (a reference
// could not be null), with Point's bounds and descriptions.
func centerOpt(d string) fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) {
		s.Description = d
		for name, opts := range pointSchema().fields {
			if p := s.Properties[name]; p != nil {
				for _, o := range opts {
					o(p)
				}
			}
		}
	})
}

// pointsOpt is the schema of a zone's points.
func pointsOpt() fieldOpt {
	return schemaOpt(func(s *openapi3.Schema) {
		s.Items = componentRef("Point")
		s.MinItems = places.MinPoints
		mx := uint64(places.MaxPoints)
		s.MaxItems = &mx
	})
}

// zoneSchema is the Zone component.
func zoneSchema() wireType {
	return wireType{name: "Zone", value: storage.Zone{}, description: "A place an account draws (docs/design.md §15): a circle or a polygon.",
		uses: []wireType{pointSchema()},
		fields: map[string][]fieldOpt{
			"id":         {desc("Id of the zone: what event rules name in zones (as a string)."), minimum(1)},
			"account_id": {desc("The account it belongs to."), minimum(1)},
			"name":       {desc("Name, 1 to 100 characters."), maxLen(storage.MaxZoneName)},
			"kind":       {desc("circle or polygon."), enum(places.KindCircle, places.KindPolygon)},
			"center":     {centerOpt("A circle's center; null for a polygon."), nullable()},
			"radius_m":   {desc("A circle's radius in metres; null for a polygon."), minimum(places.MinRadiusM), maximum(places.MaxRadiusM), nullable()},
			"points":     {desc("A polygon's closed ring as given (the last point equals the first); null for a circle."), pointsOpt(), nullable()},
			"color":      {desc(`Display color, "#rrggbb", or empty.`), pattern(`^(#[0-9A-Fa-f]{6})?$`)},
			"created_at": {desc("When the zone was created.")},
			"updated_at": {desc("When it last changed.")},
		}}
}

// zoneInputFields are the fields of the zone bodies.
func zoneInputFields(create bool) map[string][]fieldOpt {
	def := func(d string) string {
		if create {
			return d
		}
		return ""
	}
	return map[string][]fieldOpt{
		"name":     {typed(openapi3.TypeString), minLen(1), maxLen(storage.MaxZoneName), desc("1 to 100 characters, not blank." + def(" Required."))},
		"kind":     {typed(openapi3.TypeString), enum(places.KindCircle, places.KindPolygon), desc("circle or polygon." + def(" Required."))},
		"center":   {centerOpt("A circle's center; only for a circle."), notNull()},
		"radius_m": {minimum(places.MinRadiusM), maximum(places.MaxRadiusM), desc("A circle's radius in metres; only for a circle."), notNull()},
		"points":   {pointsOpt(), desc("A polygon's closed ring, the last point equal to the first; only for a polygon.")},
		"color":    {pattern(`^(#[0-9A-Fa-f]{6})?$`), maxLen(7), desc(`"#rrggbb" or empty.` + def(" Defaults to empty."))},
	}
}

// zoneKindFields relates a zone body's geometry to its kind (an if/then
// whose else holds the second if/then: kin-openapi's JSON Schema 2020-12
// validation skips an if inside allOf): with kind circle, points is absent
// (and on a create, center and radius_m are required); with kind polygon,
// center and radius_m are absent (and on a create, points is required). A
// PATCH that keeps the kind may give the kind's fields alone: what it
// needs depends on the zone stored, which no schema knows.
func zoneKindFields(create bool) func(*openapi3.Schema) {
	kindIs := func(k string) *openapi3.SchemaRef {
		s := openapi3.NewObjectSchema()
		s.Required = []string{"kind"}
		s.Properties = openapi3.Schemas{"kind": openapi3.NewSchemaRef("", &openapi3.Schema{Enum: []any{k}})}
		return openapi3.NewSchemaRef("", s)
	}
	has := func(field string) *openapi3.SchemaRef {
		return openapi3.NewSchemaRef("", &openapi3.Schema{Required: []string{field}})
	}
	rule := func(need, absent []string) *openapi3.SchemaRef {
		then := &openapi3.Schema{}
		if create {
			then.Required = need
		}
		var not openapi3.SchemaRefs
		for _, f := range absent {
			not = append(not, has(f))
		}
		then.Not = openapi3.NewSchemaRef("", &openapi3.Schema{AnyOf: not})
		return openapi3.NewSchemaRef("", then)
	}
	return func(s *openapi3.Schema) {
		s.If, s.Then = kindIs(places.KindCircle), rule([]string{"center", "radius_m"}, []string{"points"})
		s.Else = openapi3.NewSchemaRef("", &openapi3.Schema{If: kindIs(places.KindPolygon),
			Then: rule([]string{"points"}, []string{"center", "radius_m"})})
	}
}

// zoneInputSchema is the ZoneInput component, the body of POST /zones.
func zoneInputSchema() wireType {
	return wireType{name: "ZoneInput", value: ZoneInput{}, required: []string{"name", "kind"}, uses: []wireType{pointSchema()},
		complete:    zoneKindFields(true),
		description: "A zone to draw (docs/design.md §15). " + zoneShapeRules + " Field names are exact; unknown and repeated keys are rejected.",
		fields:      zoneInputFields(true)}
}

// zonePatchSchema is the ZonePatch component, the body of PATCH /zones/{id}.
func zonePatchSchema() wireType {
	f := zoneInputFields(false)
	for name := range f {
		f[name] = append(f[name], notNull())
	}
	return wireType{name: "ZonePatch", value: ZoneInput{}, required: []string{}, minProperties: 1, uses: []wireType{pointSchema()},
		complete:    zoneKindFields(false),
		description: "A change of a zone: at least one field, none null; unknown and repeated keys are rejected.", fields: f}
}

// exampleZone is the zone of the examples.
func exampleZone() storage.Zone {
	at := time.Date(2026, 1, 15, 9, 30, 0, 0, time.UTC)
	return storage.Zone{ID: 5, AccountID: 14, Name: "Depot", Kind: places.KindPolygon, Color: "#3388ff",
		Points:    []places.Point{{Lat: 52.52, Lon: 13.40}, {Lat: 52.52, Lon: 13.41}, {Lat: 52.53, Lon: 13.41}, {Lat: 52.52, Lon: 13.40}},
		CreatedAt: at, UpdatedAt: at}
}

// exampleZoneInput is the request example of POST /zones.
func exampleZoneInput() ZoneInput {
	return ZoneInput{Name: ptr("Depot"), Kind: ptr(places.KindCircle), Center: &places.Point{Lat: 52.52, Lon: 13.405},
		RadiusM: ptr(250.0), Color: ptr("#3388ff")}
}
