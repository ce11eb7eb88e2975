package api

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// registerPassengers declares POST /passengers.
func (s *Server) registerPassengers(g *fuego.Server) {
	fuego.Post(g, "/passengers", s.postPassengers, routeOptions(
		authErrors(), errorResponses(http.StatusConflict, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType),
		[]fuego.RouteOption{
			fuego.OptionOperationID("create_passenger"), fuego.OptionTags("People and groups"),
			fuego.OptionSummary("Create a passenger"),
			fuego.OptionDescription("Creates a passenger in the caller's account (a subaccount's passenger belongs to its parent). " +
				"Needs the token permission POST /passengers and an account that is not read-only."),
			idempotentCreate(idempotencyKeyHeader),
			takesBody(passengerInputSchema(), examplePassengerInput()),
			respondsOne(passengerSchema(), examplePassenger()),
		})...)
}

// PassengerInput is the body of POST /passengers (docs/api.md §7, docs/design.md §5).
// Absent and null fields take their defaults.
type PassengerInput struct {
	PassengerName          *string `json:"passenger_name" description:"Required; 1 to 100 characters after trimming." maxLength:"100"`
	PassengerAssignID      *string `json:"passenger_assign_id" description:"At most 50 characters; stored upper-case; unique in the account when not empty." maxLength:"50"`
	PassengerIDN           *string `json:"passenger_idn"`
	PassengerAddress       *string `json:"passenger_address"`
	PassengerPhone         *string `json:"passenger_phone"`
	PassengerEmail         *string `json:"passenger_email" description:"A valid e-mail address, or empty."`
	PassengerDesc          *string `json:"passenger_desc" maxLength:"1000"`
	PassengerClientID      *string `json:"passenger_client_id"`
	PassengerActive        *bool   `json:"passenger_active" description:"Defaults to true."`
	PassengerPickupPointID *int64  `json:"passenger_pickup_point_id" description:"1 or more, or null." minimum:"1"`
}

// maxIdempotencyKey is the longest Idempotency-Key accepted.
const maxIdempotencyKey = 255

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// passengerFrom builds the passenger of the body, its defaults applied,
// and checks it with storage's rule (storage.CheckPassenger: the stored
// form and docs/design.md §5), once: storage stores the checked value as it
// is. Failures, the text faults of the body included, are one
// VALIDATION_FAILED with a reason per field.
func passengerFrom(in PassengerInput, faults textFaults) (storage.CheckedPassenger, error) {
	p, err := storage.CheckPassenger(storage.Passenger{
		PassengerName:          str(in.PassengerName),
		PassengerAssignID:      str(in.PassengerAssignID),
		PassengerIDN:           str(in.PassengerIDN),
		PassengerAddress:       str(in.PassengerAddress),
		PassengerPhone:         str(in.PassengerPhone),
		PassengerEmail:         str(in.PassengerEmail),
		PassengerDesc:          str(in.PassengerDesc),
		PassengerClientID:      str(in.PassengerClientID),
		PassengerActive:        in.PassengerActive == nil || *in.PassengerActive,
		PassengerPickupPointID: in.PassengerPickupPointID,
	})
	var bad storage.InvalidFields
	if err != nil && !errors.As(err, &bad) {
		return p, err
	}
	fields := map[string]any{}
	for field, reason := range bad {
		fields[field] = reason
	}
	// A value that was not valid text is reported as such, not by what
	// encoding/json's replacement of it would fail.
	for field, reason := range faults {
		fields[field] = reason
	}
	if len(fields) > 0 {
		return p, newError(CodeValidationFailed, "the passenger is not valid", map[string]any{"fields": fields})
	}
	return p, nil
}

// idempotencyRequest reads the Idempotency-Key header of a create; nil
// when absent. The key's request hash is of route (naming the create, so
// that a key used on two routes is reused; "" for POST /passengers, whose
// stored hashes predate the other creates) and the request's canonical
// JSON form.
func idempotencyRequest(r *http.Request, accountID int64, route string, request any) (*storage.IdempotentRequest, error) {
	values := r.Header.Values("Idempotency-Key")
	if len(values) == 0 {
		return nil, nil
	}
	key := values[0]
	ok := len(values) == 1 && len(key) >= 1 && len(key) <= maxIdempotencyKey
	for i := 0; ok && i < len(key); i++ {
		ok = key[i] > ' ' && key[i] < 0x7f
	}
	if !ok {
		return nil, invalidParam("Idempotency-Key", fmt.Sprintf("must be one header of 1 to %d visible ASCII characters", maxIdempotencyKey))
	}
	canonical, err := json.Marshal(request)
	if err != nil {
		return nil, err
	}
	if route != "" {
		canonical = append([]byte(route+"\n"), canonical...)
	}
	h := sha256.Sum256(canonical)
	return &storage.IdempotentRequest{AccountID: accountID, Key: key, RequestHash: h[:]}, nil
}

// postPassengers answers POST /passengers: 201 with the created passenger.
// A subaccount's passenger belongs to its parent account. With an
// Idempotency-Key, a retry returns the first response.
func (s *Server) postPassengers(c fuego.ContextWithBody[PassengerInput]) (*Envelope[storage.Passenger], error) {
	r := c.Request()
	p, err := validBody(r, passengerFrom)
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	cl, ok := callFrom(ctx)
	if !ok {
		return nil, errors.New("postPassengers: no authenticated call in context")
	}
	idem, err := idempotencyRequest(r, cl.principal.Account.ID, "", p.Passenger())
	if err != nil {
		return nil, err
	}
	scope, err := s.scopeFor(ctx, storage.Passengers.Resource())
	if err != nil {
		return nil, err
	}
	owner := cl.principal.Account.ID
	if cl.principal.Account.Type == tenancy.Subaccount {
		owner = cl.principal.Account.ManagerID
	}
	created, replayed, err := s.cfg.Store.CreatePassenger(ctx, scope, owner, p, idem)
	switch {
	case errors.Is(err, storage.ErrIdempotencyKeyReused):
		return nil, newError(CodeIdempotencyKeyReused, "the Idempotency-Key was used with another request body", nil)
	case errors.Is(err, storage.ErrConflict):
		return nil, newError(CodeConflict, "a passenger with this passenger_assign_id already exists in the account",
			map[string]any{"field": "passenger_assign_id"})
	case errors.Is(err, storage.ErrNotFound):
		// The owner (the caller's account or its parent) was erased while
		// the request ran, the caller with it: its token no longer
		// authenticates, and this is the answer its next request gets.
		return nil, newError(CodeInvalidToken, "the caller's account was erased: its tokens no longer authenticate", nil)
	case errors.Is(err, storage.ErrInvalid):
		// The database refused a value the rule let through.
		return nil, newError(CodeValidationFailed, "the passenger is not valid", invalidFields(err))
	case err != nil:
		return nil, err
	}
	return createdEnvelope(c, created, replayed), nil
}

// passengerField is one field of a passenger as both schemas show it: its
// bounds, and what the Passenger component (wire) and the PassengerInput
// body (input; empty: as wire) say of it.
type passengerField struct {
	name   string
	bounds []fieldOpt
	// rules are the input's bounds only: what the server checks of a
	// value sent.
	rules       []fieldOpt
	wire, input string
}

// passengerFields declares each field of a passenger once, for the
// Passenger component and the PassengerInput body (passenger_id, the
// server's, is the component's alone).
func passengerFields() []passengerField {
	return []passengerField{
		{"passenger_name", []fieldOpt{minLen(1), maxLen(100)}, []fieldOpt{pattern(passengerNamePattern())}, "Name, trimmed.",
			"Required; 1 to 100 characters after trimming, at least one of them visible. Whitespace, control and zero-width characters at the ends are trimmed."},
		{"passenger_assign_id", []fieldOpt{maxLen(50)}, nil, "Assignment id (for example a card), in Unicode NFC and upper-case; unique in the account when not empty.",
			"At most 50 characters after trimming; stored in Unicode NFC and upper-case, so composed and decomposed spellings are one id; unique in the account when not empty."},
		{"passenger_idn", nil, nil, "Identity number.", ""},
		{"passenger_address", nil, nil, "Address.", ""},
		{"passenger_phone", nil, nil, "Phone number.", ""},
		{"passenger_email", nil, []fieldOpt{pattern(emailPattern())}, "E-mail address, or empty.", "A valid e-mail address (no display name, no quoted local part), or empty."},
		{"passenger_desc", []fieldOpt{maxLen(1000)}, nil, "Description.", "At most 1000 characters."},
		{"passenger_client_id", nil, nil, "The client's own id of the passenger.", ""},
		{"passenger_active", nil, nil, "Whether the passenger is active.", "Defaults to true."},
		{"passenger_pickup_point_id", []fieldOpt{minimum(1)}, nil, "Pickup point, or null.", "1 or more, or null (the default)."},
	}
}

// passengerSchemaFields are the fields of the Passenger component, or with
// input those of the PassengerInput body.
func passengerSchemaFields(input bool) map[string][]fieldOpt {
	out := map[string][]fieldOpt{}
	for _, f := range passengerFields() {
		d := f.wire
		if input && f.input != "" {
			d = f.input
		}
		opts := append(slices.Clone(f.bounds), desc(d))
		if input {
			opts = append(opts, f.rules...)
		}
		out[f.name] = opts
	}
	return out
}

// passengerSchema is the Passenger component.
func passengerSchema() wireType {
	fields := passengerSchemaFields(false)
	fields["passenger_id"] = []fieldOpt{desc("Id of the passenger."), minimum(1)}
	return wireType{name: "Passenger", value: storage.Passenger{}, description: "A passenger (docs/api.md §7).", fields: fields}
}

// passengerInputSchema is the PassengerInput component, the request body.
func passengerInputSchema() wireType {
	fields := passengerSchemaFields(true)
	// A name is required: never null.
	fields["passenger_name"] = append(fields["passenger_name"], typed(openapi3.TypeString))
	return wireType{name: "PassengerInput", value: PassengerInput{}, required: []string{"passenger_name"},
		description: "A passenger to create (docs/api.md §7). Absent and null fields take their defaults. Field names are exact " +
			"(case-sensitive); unknown and repeated keys are rejected. Strings must be valid UTF-8 without NUL characters.",
		fields: fields}
}

// examplePassengerInput is the request example of POST /passengers, and
// examplePassenger the passenger it creates.
func examplePassengerInput() PassengerInput {
	return PassengerInput{PassengerName: ptr("Ana Silva"), PassengerAssignID: ptr("card-0042"),
		PassengerPhone: ptr("+351 210 000 000"), PassengerEmail: ptr("ana.silva@acme.example"),
		PassengerPickupPointID: ptr(int64(3))}
}

func examplePassenger() storage.Passenger {
	return storage.Passenger{PassengerID: 31, PassengerName: "Ana Silva", PassengerAssignID: "CARD-0042",
		PassengerPhone: "+351 210 000 000", PassengerEmail: "ana.silva@acme.example", PassengerActive: true,
		PassengerPickupPointID: ptr(int64(3))}
}
