package api

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
)

// registerObjects declares GET /objects, a list route of the objects
// resource (the devices; its rows are their own wire form), GET
// /objects/{id} (one of them, in the same scope), POST /objects and PATCH
// /objects/{id}.
func (s *Server) registerObjects(g *fuego.Server) {
	listRoute(g, s, storage.Objects, same[storage.Object], authErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("get_objects"), fuego.OptionTags("Fleet"),
		fuego.OptionSummary("Paged list of devices"),
		fuego.OptionDescription("The devices (objects) the caller may see: an admin every device, a manager its own and its managed accounts' devices, " +
			"a user its own, a subaccount those of its parent granted to it. Needs the token permission GET /objects."),
		respondsPage(objectSchema(), []storage.Object{exampleObject()}),
	})
	fuego.Get(g, "/objects/{id}", s.getObject, routeOptions(oneErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("get_object"), fuego.OptionTags("Fleet"),
		fuego.OptionSummary("Read one device and its current state"),
		fuego.OptionDescription("One device by id, with its current state (docs/design.md §14): the time of its newest accepted reading " +
			"(last_time), its position (lat, lon), speed, heading, altitude, ignition and the newest value of each attribute, each from " +
			"the newest reading that reported it, and the odometer and engine hours. The state fields are null until the device's first " +
			"reading (POST /readings). The same JSON as an item of GET /objects, in the same scope: an admin any device, a manager its own " +
			"and its managed accounts' devices, a user its own, a subaccount those of its parent granted to it. A device outside the " +
			"caller's scope is 404, like one that does not exist. Needs the token permission GET /objects/{id}."),
		respondsOne(objectSchema(), exampleObject()),
	}, pathID("id", "Device id.", exampleObject().ID))...)
	fuego.Post(g, "/objects", s.postObjects, routeOptions(writeErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("create_object"), fuego.OptionTags("Fleet"),
		fuego.OptionSummary("Register a device"),
		fuego.OptionDescription("Registers a device for an account in the caller's management scope (404 outside). The IMEI is unique " +
			"across the platform: one physical device. An IMEI already registered, by anyone, is 409 CONFLICT, the same answer " +
			"whoever holds it (it names no account); an admin moves a device between accounts with PATCH /objects/{id}. A subaccount owns no devices: 403 MANAGEMENT_DENIED (wrong_target_type). " +
			"Needs the token permission POST /objects and write access."),
		idempotentCreate(idempotencyKeyHeader),
		takesBody(objectInputSchema(), exampleObjectInput()),
		respondsOne(objectSchema(), exampleObject()),
	})...)
	fuego.Patch(g, "/objects/{id}", s.patchObject, routeOptions(changeErrors(),
		[]fuego.RouteOption{
			fuego.OptionOperationID("move_object"), fuego.OptionTags("Fleet"),
			fuego.OptionSummary("Move a device to another account"),
			fuego.OptionDescription("An IMEI is one physical device, unique across the platform: when it changes hands it is moved, " +
				"not registered again. The device's owner and the new account must both be in the caller's management scope " +
				"(404 otherwise, the same for a device that does not exist): an admin moves any device, a manager between its own " +
				"accounts. A subaccount owns no devices: 403 MANAGEMENT_DENIED (wrong_target_type). The device's grants to the old " +
				"owner's subaccounts are removed; the move is audited (object.move). Needs the token permission PATCH /objects/{id} " +
				"and write access."),
			takesBody(objectMoveSchema(), ObjectMove{AccountID: ptr(int64(7))}),
			respondsOne(objectSchema(), exampleObject()),
		}, pathID("id", "Device id.", exampleObject().ID))...)
}

// getObject answers GET /objects/{id}: the device and its current state.
// A device outside the caller's objects scope is NOT_FOUND, exactly like
// one that does not exist.
func (s *Server) getObject(c fuego.ContextNoBody) (*Envelope[storage.Object], error) {
	id, err := idParamOnly(c)
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	scope, err := s.scopeFor(ctx, storage.Objects.Resource())
	if err != nil {
		return nil, err
	}
	o, err := s.cfg.Store.ObjectByID(ctx, scope, id)
	if err != nil {
		return nil, err
	}
	return &Envelope[storage.Object]{Data: o}, nil
}

// ObjectMove is the body of PATCH /objects/{id}: the device's new owner.
type ObjectMove struct {
	AccountID *int64 `json:"account_id,omitempty"`
}

// objectMoveSchema is the ObjectMove component.
func objectMoveSchema() wireType {
	return wireType{name: "ObjectMove", value: ObjectMove{}, required: []string{"account_id"},
		description: "The account a device moves to (docs/design.md §9, object.move). Unknown and repeated keys are rejected.",
		fields: map[string][]fieldOpt{
			"account_id": {minimum(1), notNull(), desc("Required: the new owner, in the caller's management scope; not a subaccount.")},
		}}
}

// moveFrom validates a PATCH /objects/{id} body: the new owner's id.
func moveFrom(in ObjectMove, faults textFaults) (int64, error) {
	v := validation{}
	if in.AccountID == nil || *in.AccountID < 1 {
		v["account_id"] = "required: the id of the new owner (1 or more)"
	}
	for f, reason := range faults {
		v[f] = reason
	}
	if err := v.err("the move"); err != nil {
		return 0, err
	}
	return *in.AccountID, nil
}

// patchObject answers PATCH /objects/{id}: 200 with the moved device.
func (s *Server) patchObject(c fuego.ContextWithBody[ObjectMove]) (*Envelope[storage.Object], error) {
	id, err := idParam(c)
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	// The device is looked up before the new owner: a device outside the
	// caller's scope is 404 whatever the body names.
	w, err := managementWrite[ObjectMove, int64]{validate: moveFrom}.open(s, ctx, c.Request())
	if err != nil {
		return nil, err
	}
	cur, err := s.cfg.Store.ManagedObject(ctx, w.scope, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, newError(CodeNotFound, fmt.Sprintf("device %d not found", id), nil)
	}
	if err != nil {
		return nil, err
	}
	owner := w.value
	_, target, err := s.target(ctx, w.manager, owner)
	if err != nil {
		return nil, err
	}
	change := map[string]any{"imei": cur.IMEI, "from_account_id": cur.AccountID, "account_id": owner}
	if err := s.decideManagement(ctx, w.manager, policy.ActionObjectMove, target, change); err != nil {
		return nil, err
	}
	moved, err := s.cfg.Store.MoveObject(ctx, w.scope, actor(ctx, w.manager), id, owner)
	if err != nil {
		return nil, writeError(err, "", "")
	}
	return &Envelope[storage.Object]{Data: moved}, nil
}

// maxObjectName bounds a device's name, in characters.
const maxObjectName = 100

// ObjectInput is the body of POST /objects (docs/design.md §9).
type ObjectInput struct {
	IMEI        *string `json:"imei,omitempty"`
	Name        *string `json:"name,omitempty"`
	AccountID   *int64  `json:"account_id,omitempty"`
	Odometer    *int64  `json:"odometer,omitempty"`
	EngineHours *int64  `json:"engine_hours,omitempty"`
}

// objectFrom validates a POST /objects body and builds the device.
func objectFrom(in ObjectInput, faults textFaults) (storage.Object, error) {
	v := validation{}
	var o storage.Object
	if in.IMEI == nil || !imeiPattern.MatchString(*in.IMEI) {
		v["imei"] = "required: 1 to 50 letters, digits or '-'"
	} else {
		o.IMEI = *in.IMEI
	}
	o.Name = str(in.Name)
	if utf8.RuneCountInString(o.Name) > maxObjectName {
		v["name"] = "at most 100 characters"
	}
	if in.AccountID == nil || *in.AccountID < 1 {
		v["account_id"] = "required: the id of the owning account (1 or more)"
	} else {
		o.AccountID = *in.AccountID
	}
	if in.Odometer != nil {
		o.Odometer = *in.Odometer
	}
	if o.Odometer < 0 {
		v["odometer"] = "0 or more (km)"
	}
	if in.EngineHours != nil {
		o.EngineHours = *in.EngineHours
	}
	if o.EngineHours < 0 {
		v["engine_hours"] = "0 or more (h)"
	}
	for f, reason := range faults {
		v[f] = reason
	}
	return o, v.err("the device")
}

// postObjects answers POST /objects: 201 with the registered device.
func (s *Server) postObjects(c fuego.ContextWithBody[ObjectInput]) (*Envelope[storage.Object], error) {
	ctx := c.Context()
	w, err := managementWrite[ObjectInput, storage.Object]{validate: objectFrom, create: "POST /objects",
		account: func(o storage.Object) *int64 { return &o.AccountID }}.open(s, ctx, c.Request())
	if err != nil {
		return nil, err
	}
	o := w.value
	change := map[string]any{"imei": o.IMEI, "name": o.Name, "account_id": o.AccountID, "odometer": o.Odometer, "engine_hours": o.EngineHours}
	if err := s.decideManagement(ctx, w.manager, policy.ActionObjectCreate, w.target, change); err != nil {
		return nil, err
	}
	o, replayed, err := s.cfg.Store.CreateObject(ctx, w.scope, actor(ctx, w.manager), o, w.idem)
	if err != nil {
		return nil, writeError(err, "a device with this imei already exists", "imei")
	}
	return createdEnvelope(c, o, replayed), nil
}

// objectInputSchema is the ObjectInput component, the body of POST
// /objects.
func objectInputSchema() wireType {
	return wireType{name: "ObjectInput", value: ObjectInput{}, required: []string{"imei", "account_id"},
		description: "A device to register (docs/design.md §9). Absent and null optional fields take their defaults (empty name, zero readings). " +
			"Field names are exact; unknown and repeated keys are rejected.",
		fields: map[string][]fieldOpt{
			"imei":         {typed(openapi3.TypeString), minLen(1), maxLen(50), pattern(imeiPattern.String()), desc("Required; unique across the platform.")},
			"name":         {maxLen(maxObjectName), desc("Name of the device; defaults to empty.")},
			"account_id":   {minimum(1), notNull(), desc("Required: the owning account, in the caller's management scope; not a subaccount.")},
			"odometer":     {minimum(0), desc("Current odometer (km); defaults to 0.")},
			"engine_hours": {minimum(0), desc("Current engine hours (h); defaults to 0.")},
		}}
}

func exampleObjectInput() ObjectInput {
	o := exampleObject()
	return ObjectInput{IMEI: &o.IMEI, Name: &o.Name, AccountID: &o.AccountID, Odometer: &o.Odometer, EngineHours: &o.EngineHours}
}

// objectSchema is the Object component.
func objectSchema() wireType {
	return wireType{name: "Object", value: storage.Object{}, description: "A device (object) of the fleet (docs/design.md §9).", fields: map[string][]fieldOpt{
		"id":           {desc("Id of the device."), minimum(1)},
		"imei":         {minLen(1), maxLen(50), desc("IMEI of the device, unique across the platform.")},
		"account_id":   {minimum(1), desc("Id of the account that owns the device.")},
		"name":         {desc("Name of the device.")},
		"odometer":     {minimum(0), desc("Current odometer (km): the whole part of the newest reading that reported one.")},
		"engine_hours": {minimum(0), desc("Current engine hours (h): the whole part of the newest reading that reported them.")},
		"last_time":    {typed(openapi3.TypeString), format("date-time"), nullable(), desc("Time of the newest accepted reading (docs/design.md §14); null: never reported.")},
		"lat":          {desc("Latitude of the newest reading that reported a position; null: never reported.")},
		"lon":          {desc("Longitude of the newest reading that reported a position; null: never reported.")},
		"speed":        {desc("Speed (km/h) of the newest reading that reported one; null: never reported.")},
		"heading":      {desc("Heading (degrees); null: never reported.")},
		"altitude":     {desc("Altitude (m); null: never reported.")},
		"ignition":     {desc("Ignition; null: never reported.")},
		"attributes":   {freeObject(), nullable(), desc("The newest value of each attribute reported; null: never reported.")},
	}}
}

func exampleObject() storage.Object {
	return storage.Object{ID: 5, IMEI: "356938035643809", AccountID: 4, Name: "Truck 7", Odometer: 120345, EngineHours: 3400}
}
