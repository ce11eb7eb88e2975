package api

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/fleetapi/fleetapi/storage"
)

// OpenAPIVersion is the OpenAPI version of the published document.
const OpenAPIVersion = "3.1.0"

// securitySchemeName names the API token scheme in the document.
const securitySchemeName = "ApiToken"

// apiTags are the twelve tags of docs/api.md §1, in the spec's order.
var apiTags = []struct{ name, description string }{
	{"System", "The service itself. The OpenAPI document (GET /api/v2/openapi.json) and the docs page (GET /api/v2/docs) are served without a token."},
	{"Account", "The account the API token belongs to, and what the token may do."},
	{"Fleet", "Vehicles and devices (objects) of the fleet."},
	{"Tracking", "Positions, routes and history of the devices. No operation is published yet."},
	{"Commands", "Commands sent to the devices. No operation is published yet."},
	{"Places", "Zones, routes and points of interest. No operation is published yet."},
	{"People and groups", "Passengers, drivers and groups."},
	{"Events", "Event rules: conditions on the devices and the notifications they send (docs/api.md §7)."},
	{"Maintenance", "Maintenance service records of the devices and the services that are due."},
	{"Sensors", "Sensors of the devices. No operation is published yet."},
	{"Reports", "Report definitions."},
	{"Templates", "Templates of notifications. No operation is published yet."},
}

// errorResponse is the shared response of one error status.
type errorResponse struct {
	name, description string
	retryAfter        bool
}

// errorResponseOf describes each error status an operation may declare,
// with the codes of docs/design.md §4 it carries.
var errorResponseOf = map[int]errorResponse{
	http.StatusBadRequest: {"BadRequest", "INVALID_PARAMETER: a query, path or header parameter is unknown, repeated, " +
		"of the wrong type, out of bounds or not in its enumeration (details.parameter, details.reason). " +
		"INVALID_BODY: the body is not one JSON object of known fields (exact, case-sensitive names; no key twice) " +
		"of the right types (details.field when known). " +
		"VALIDATION_FAILED: body fields fail validation (details.fields: field → reason).", false},
	http.StatusUnauthorized: {"Unauthorized", "AUTH_REQUIRED: no Authorization header. INVALID_TOKEN: the token is malformed, " +
		"unknown or revoked. TOKEN_EXPIRED. ACCOUNT_INACTIVE or ACCOUNT_EXPIRED: the token's account, or an account above it " +
		"(its manager, that manager's manager; admins aside), cannot use the API (details.account_id names it).", false},
	http.StatusForbidden: {"Forbidden", "TOKEN_PERMISSION_DENIED: the token lacks the permission of the method and route. " +
		"PRIVILEGE_REQUIRED: a subaccount lacks the reports or event_notifications privilege (details.privilege). " +
		"READ_ONLY_ACCOUNT: a read-only account, or an account below a read-only one, used a write operation " +
		"(details.account_id names the read-only account).", false},
	http.StatusNotFound: {"NotFound", "NOT_FOUND: the record does not exist or is outside the caller's scope " +
		"(the two cannot be told apart).", false},
	http.StatusConflict: {"Conflict", "CONFLICT: a unique field is taken (details.field). " +
		"IDEMPOTENCY_KEY_REUSED: the Idempotency-Key was used with another body.", false},
	http.StatusRequestEntityTooLarge: {"PayloadTooLarge", "PAYLOAD_TOO_LARGE: the body is larger than 64 KiB.", false},
	http.StatusUnsupportedMediaType:  {"UnsupportedMediaType", "UNSUPPORTED_MEDIA_TYPE: the body is not application/json.", false},
	http.StatusTooManyRequests: {"TooManyRequests", "RATE_LIMITED: over the token's request limit, or over the client's " +
		"limit of failed authentications. Retry after Retry-After seconds.", true},
	http.StatusInternalServerError: {"InternalError", "INTERNAL_ERROR: an unexpected failure; the body carries no internals.", false},
	http.StatusServiceUnavailable:  {"ServiceUnavailable", "SERVICE_UNAVAILABLE: the database cannot be reached. Retry after Retry-After seconds.", true},
}

var apiDescription = `The fleetapi client API, version 2: the account of an API token, maintenance services, passengers, reports and event rules of a vehicle fleet tracking platform.

**Authentication.** Every operation needs an API token in the ` + "`Authorization`" + ` header, as ` + "`Bearer <API_TOKEN>`" + ` or as the bare ` + "`<API_TOKEN>`" + `. Each token has its own permissions (` + "`METHOD /route`, `GET *` or `*`" + `); every result is restricted to what the token's account may see.

**Envelopes.** A success is ` + "`{\"success\": true, \"data\": ..., \"meta\": {...}}`" + `; a failure is ` + "`{\"success\": false, \"error\": {\"code\", \"message\", \"details\"}, \"meta\": {...}}`" + `. ` + "`meta.request_id`" + ` always equals the ` + "`X-Request-Id`" + ` response header (a well-formed ` + "`X-Request-Id`" + ` request header is kept).

**Lists** take page, per_page (1–` + strconv.Itoa(storage.MaxPerPage) + `, default ` + strconv.Itoa(storage.DefaultPerPage) + `), search, order, sort and one exact-match filter per field; an unknown or repeated parameter is 400 INVALID_PARAMETER.

**Outside the operations below**, an unknown path answers 404 NOT_FOUND and a known path with another method 405 METHOD_NOT_ALLOWED (with ` + "`Allow`" + `), both in the error envelope. Checks run in this order: authentication (401), rate limit (429), permission (403), parameters and body (400, 413, 415), then the operation.`

// finishOpenAPI builds the published document from the operations Fuego
// generated for the routes, and from them alone: the paths become relative
// to the server BasePath, each operation keeps its id, tag, summary,
// description and declared parameters, and gets the typed responses,
// examples and security its declaration (operationDoc) and this API say;
// the component schemas are those of the wire types the operations name.
// Fuego's own additions (Accept parameters, HTTPError responses, XML
// content, generated descriptions and schemas, the operationDoc extension)
// are dropped.
func finishOpenAPI(gen *openapi3.T) (*openapi3.T, error) {
	doc := &openapi3.T{
		OpenAPI: OpenAPIVersion,
		Info: &openapi3.Info{
			Title:       "fleetapi client API",
			Version:     "2.0.0",
			Description: apiDescription,
		},
		Servers:  openapi3.Servers{{URL: BasePath, Description: "This server: every path below is relative to " + BasePath + "."}},
		Paths:    openapi3.NewPaths(),
		Security: openapi3.SecurityRequirements{{securitySchemeName: []string{}}},
		Components: &openapi3.Components{
			Responses: openapi3.ResponseBodies{},
			Headers:   responseHeaders(),
			SecuritySchemes: openapi3.SecuritySchemes{securitySchemeName: {Value: &openapi3.SecurityScheme{
				Type: "apiKey", In: "header", Name: "Authorization",
				Description: "The API token, sent as `Authorization: Bearer <API_TOKEN>` or as the bare `Authorization: <API_TOKEN>`. " +
					"Tokens are `flt_` followed by 32 letters and digits.",
			}}},
		},
	}
	for _, t := range apiTags {
		doc.Tags = append(doc.Tags, &openapi3.Tag{Name: t.name, Description: t.description})
	}

	var docs []*operationDoc
	paths := gen.Paths.Map()
	for _, path := range slices.Sorted(maps.Keys(paths)) {
		rel, ok := strings.CutPrefix(path, BasePath)
		if !ok || rel == "" {
			return nil, fmt.Errorf("openapi: path %s is outside %s", path, BasePath)
		}
		item := &openapi3.PathItem{}
		ops := paths[path].Operations()
		for _, method := range slices.Sorted(maps.Keys(ops)) {
			out, d, err := finishOperation(ops[method], doc.Components.Responses)
			if err != nil {
				return nil, fmt.Errorf("openapi: %s %s: %w", method, path, err)
			}
			item.SetOperation(method, out)
			docs = append(docs, d)
		}
		doc.Paths.Set(rel, item)
	}
	schemas, err := wireSchemas(operationTypes(docs))
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if d.request != nil {
			inputRules(schemas[d.request.name].Value)
		}
	}
	addEnvelopeSchemas(schemas, docs)
	doc.Components.Schemas = schemas
	return doc, nil
}

// operationTypes lists the wire types the operations name (their data,
// the types those refer to, their request bodies) and the error's.
func operationTypes(docs []*operationDoc) []wireType {
	types := []wireType{errorSchema()}
	for _, d := range docs {
		if d.noContent {
			continue
		}
		types = append(types, d.data)
		types = append(types, d.data.uses...)
		if d.request != nil {
			types = append(types, *d.request)
			types = append(types, d.request.uses...)
		}
	}
	return types
}

// finishOperation makes the published form of one generated operation,
// adds the error responses it refers to to responses, and returns the
// operation's declaration (operationDoc).
func finishOperation(op *openapi3.Operation, responses openapi3.ResponseBodies) (*openapi3.Operation, *operationDoc, error) {
	id := op.OperationID
	d, ok := op.Extensions[docExtension].(*operationDoc)
	if !ok || (!d.noContent && (d.data.name == "" || d.example == nil)) {
		return nil, nil, fmt.Errorf("operation %q declares no success response (respondsOne, respondsList, respondsPage or respondsNoContent)", id)
	}
	if len(op.Tags) != 1 || !slices.ContainsFunc(apiTags, func(t struct{ name, description string }) bool { return t.name == op.Tags[0] }) {
		return nil, nil, fmt.Errorf("operation %q: want one of the tags of docs/api.md §1, have %v", id, op.Tags)
	}
	if op.Summary == "" || op.Description == "" {
		return nil, nil, fmt.Errorf("operation %q needs a summary and a description", id)
	}
	out := &openapi3.Operation{
		OperationID: id, Tags: op.Tags, Summary: op.Summary, Description: op.Description,
		Security:  &openapi3.SecurityRequirements{{securitySchemeName: []string{}}},
		Responses: openapi3.NewResponsesWithCapacity(len(op.Responses.Map())),
	}
	for _, p := range op.Parameters {
		if p.Value.In == openapi3.ParameterInHeader && p.Value.Name == "Accept" {
			continue // Fuego adds one to every operation; the API always answers JSON
		}
		if p.Value.Description == "" || (p.Value.Schema == nil) == (p.Value.Content == nil) {
			return nil, nil, fmt.Errorf("operation %q: parameter %s needs a description and a schema or a content", id, p.Value.Name)
		}
		if p.Value.Schema != nil {
			inputRules(p.Value.Schema.Value)
		}
		if p.Value.In == openapi3.ParameterInPath && p.Value.Example == nil {
			return nil, nil, fmt.Errorf("operation %q: path parameter %s needs an example", id, p.Value.Name)
		}
		out.Parameters = append(out.Parameters, p)
	}
	if (op.RequestBody != nil) != (d.request != nil) {
		return nil, nil, fmt.Errorf("operation %q: the handler's body and the declared body (takesBody) disagree", id)
	}
	if d.request != nil {
		ex, err := jsonValue(d.requestExample)
		if err != nil {
			return nil, nil, err
		}
		out.RequestBody = &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(true).
			WithDescription("A JSON object (Content-Type application/json) of at most 64 KiB.").
			WithContent(openapi3.Content{"application/json": &openapi3.MediaType{Schema: componentRef(d.request.name), Example: ex}})}
	}
	for code := range op.Responses.Map() {
		status, err := strconv.Atoi(code)
		if err != nil {
			return nil, nil, fmt.Errorf("operation %q: response %q is not a status", id, code)
		}
		if status < 400 && d.noContent {
			out.Responses.Set(code, &openapi3.ResponseRef{Value: noContentResponse(status)})
			continue
		}
		if status < 400 {
			ex, err := jsonValue(d.example)
			if err != nil {
				return nil, nil, err
			}
			out.Responses.Set(code, &openapi3.ResponseRef{Value: successResponse(status, d.envelope(), ex)})
			continue
		}
		er, ok := errorResponseOf[status]
		if !ok {
			return nil, nil, fmt.Errorf("operation %q: no shared response for status %d", id, status)
		}
		if _, done := responses[er.name]; !done {
			resp, err := sharedErrorResponse(status, er)
			if err != nil {
				return nil, nil, err
			}
			responses[er.name] = &openapi3.ResponseRef{Value: resp}
		}
		out.Responses.Set(code, &openapi3.ResponseRef{Ref: "#/components/responses/" + er.name})
	}
	return out, d, nil
}

// successResponse is the success response of an operation.
func successResponse(status int, envelope string, example any) *openapi3.Response {
	d := http.StatusText(status)
	if status == http.StatusCreated {
		d = "Created. With an Idempotency-Key, a retry answers the first response again (with Idempotent-Replayed: true)."
	}
	headers := openapi3.Headers{
		"X-Request-Id": headerRef("X-Request-Id"), "RateLimit-Limit": headerRef("RateLimit-Limit"),
		"RateLimit-Remaining": headerRef("RateLimit-Remaining"), "RateLimit-Reset": headerRef("RateLimit-Reset"),
	}
	if status == http.StatusCreated {
		headers["Idempotent-Replayed"] = headerRef("Idempotent-Replayed")
	}
	return &openapi3.Response{Description: &d, Headers: headers,
		Content: openapi3.Content{"application/json": &openapi3.MediaType{Schema: componentRef(envelope), Example: example}}}
}

// noContentResponse is the success response without a body (204).
func noContentResponse(status int) *openapi3.Response {
	d := http.StatusText(status)
	return &openapi3.Response{Description: &d, Headers: openapi3.Headers{
		"X-Request-Id": headerRef("X-Request-Id"), "RateLimit-Limit": headerRef("RateLimit-Limit"),
		"RateLimit-Remaining": headerRef("RateLimit-Remaining"), "RateLimit-Reset": headerRef("RateLimit-Reset"),
	}}
}

// sharedErrorResponse is the response of components.responses for status.
func sharedErrorResponse(status int, er errorResponse) (*openapi3.Response, error) {
	ex, err := jsonValue(errorExample(status))
	if err != nil {
		return nil, err
	}
	d := http.StatusText(status) + ". " + er.description
	headers := openapi3.Headers{"X-Request-Id": headerRef("X-Request-Id")}
	if status != http.StatusUnauthorized && status != http.StatusInternalServerError && status != http.StatusServiceUnavailable {
		headers["RateLimit-Limit"] = headerRef("RateLimit-Limit")
		headers["RateLimit-Remaining"] = headerRef("RateLimit-Remaining")
		headers["RateLimit-Reset"] = headerRef("RateLimit-Reset")
	}
	if er.retryAfter {
		headers["Retry-After"] = headerRef("Retry-After")
	}
	return &openapi3.Response{Description: &d, Headers: headers,
		Content: openapi3.Content{"application/json": &openapi3.MediaType{Schema: componentRef("ErrorEnvelope"), Example: ex}}}, nil
}

func headerRef(name string) *openapi3.HeaderRef {
	return &openapi3.HeaderRef{Ref: "#/components/headers/" + name}
}

// responseHeaders are the response headers of components.headers.
func responseHeaders() openapi3.Headers {
	h := func(description string, required bool, schema *openapi3.Schema) *openapi3.HeaderRef {
		return &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{
			Description: description, Required: required, Schema: openapi3.NewSchemaRef("", schema)}}}
	}
	counter := func() *openapi3.Schema { return openapi3.NewInt64Schema().WithMin(0) }
	return openapi3.Headers{
		"X-Request-Id": h("Id of the request, equal to meta.request_id: the client's X-Request-Id when it has 1 to 128 "+
			"characters of [A-Za-z0-9._:-], a random one otherwise.", true,
			openapi3.NewStringSchema().WithPattern(`^[A-Za-z0-9._:-]{1,128}$`)),
		"RateLimit-Limit":     h("Requests allowed per window for this token (sent once the token is known).", false, counter()),
		"RateLimit-Remaining": h("Requests left in the current window.", false, counter()),
		"RateLimit-Reset":     h("Seconds until the window resets.", false, counter()),
		"Retry-After":         h("Seconds to wait before retrying.", true, counter()),
		"Idempotent-Replayed": h("Present, with the value true, when the response is the replay of an earlier request with the same Idempotency-Key.",
			false, openapi3.NewStringSchema().WithEnum("true")),
	}
}

// addEnvelopeSchemas adds the envelopes and their meta to schemas: the
// error envelope and the success envelope of each operation.
func addEnvelopeSchemas(schemas openapi3.Schemas, docs []*operationDoc) {
	no := false
	object := func(description string, required []string, props openapi3.Schemas) *openapi3.SchemaRef {
		s := openapi3.NewObjectSchema()
		s.Description, s.Required, s.Properties = description, required, props
		s.AdditionalProperties = openapi3.AdditionalProperties{Has: &no}
		return openapi3.NewSchemaRef("", s)
	}
	requestID := openapi3.NewStringSchema().WithPattern(`^[A-Za-z0-9._:-]{1,128}$`)
	requestID.Description = "Id of the request, equal to the X-Request-Id response header."
	paging := func() openapi3.Schemas {
		return openapi3.Schemas{
			"request_id": openapi3.NewSchemaRef("", requestID),
			"page":       described(openapi3.NewIntegerSchema().WithMin(1), "The page returned."),
			"per_page":   described(openapi3.NewIntegerSchema().WithMin(1).WithMax(storage.MaxPerPage), "Items per page."),
			"total":      described(openapi3.NewInt64Schema().WithMin(0), "Items in all pages."),
			"pages":      described(openapi3.NewInt64Schema().WithMin(0), "Number of pages: ceil(total / per_page)."),
			"next": described(openapi3.NewStringSchema().WithMinLength(1).WithMaxLength(maxCursor),
				"Extension beyond the spec: the cursor after this page's last item, present only when more items follow; pass it as after to get them."),
		}
	}
	schemas["Meta"] = object("Facts about the response.", []string{"request_id"},
		openapi3.Schemas{"request_id": openapi3.NewSchemaRef("", requestID)})
	schemas["ListMeta"] = object("Facts about a page of a list.", []string{"request_id", "page", "per_page", "total", "pages"}, paging())

	success := openapi3.NewBoolSchema()
	success.Const, success.Description = true, "Always true on success."
	failure := openapi3.NewBoolSchema()
	failure.Const, failure.Description = false, "Always false on failure."
	schemas["ErrorEnvelope"] = object("The error envelope of every failure (docs/api.md §1, §8).", []string{"success", "error", "meta"},
		openapi3.Schemas{"success": openapi3.NewSchemaRef("", failure), "error": componentRef("Error"), "meta": componentRef("Meta")})

	for _, d := range docs {
		if d.noContent {
			continue
		}
		name := d.data.name
		data, meta, what := componentRef(name), componentRef("Meta"), "one "+name
		if d.list {
			data = openapi3.NewSchemaRef("", openapi3.NewArraySchema().WithItems(&openapi3.Schema{}))
			data.Value.Items = componentRef(name)
			what = "a list of " + name
		}
		if d.paged {
			meta, what = componentRef("ListMeta"), "a page of "+name
		}
		schemas[d.envelope()] = object("The success envelope holding "+what+".", []string{"success", "data", "meta"},
			openapi3.Schemas{"success": openapi3.NewSchemaRef("", success), "data": data, "meta": meta})
	}
}

func described(s *openapi3.Schema, d string) *openapi3.SchemaRef {
	s.Description = d
	return openapi3.NewSchemaRef("", s)
}

// marshalOpenAPI encodes the document as indented JSON.
func marshalOpenAPI(doc *openapi3.T) ([]byte, error) {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// The examples of the document are Go values of the wire types, encoded as
// the handlers encode them, so that they cannot drift from the schemas
// (the document's validation checks each example against its schema).
// Each operation's example is declared beside its route; these are the
// shared parts.

const exampleRequestID = "5f0c3a8e9b1d4c7fa2e6b8d0c4f1a3e7"

func exampleMeta() Meta { return Meta{RequestID: exampleRequestID} }

func exampleListMeta(total int64) Meta {
	return Meta{RequestID: exampleRequestID, Paging: &Paging{Page: 1, PerPage: storage.DefaultPerPage, Total: total, Pages: (total + storage.DefaultPerPage - 1) / storage.DefaultPerPage}}
}

func ptr[T any](v T) *T { return &v }

// errorExample is the example error of each documented error status.
func errorExample(status int) ErrorEnvelope {
	var e *Error
	switch status {
	case http.StatusBadRequest:
		e = invalidParam(paramPerPage, fmt.Sprintf("must be between 1 and %d", storage.MaxPerPage))
	case http.StatusUnauthorized:
		e = newError(CodeInvalidToken, "the token is malformed, unknown or revoked", nil)
	case http.StatusForbidden:
		e = newError(CodeTokenPermissionDenied, "the token does not grant GET /reports",
			map[string]any{"method": "GET", "route": "/reports"})
	case http.StatusNotFound:
		e = newError(CodeNotFound, "not found", nil)
	case http.StatusConflict:
		e = newError(CodeConflict, "a passenger with this passenger_assign_id already exists in the account",
			map[string]any{"field": "passenger_assign_id"})
	case http.StatusRequestEntityTooLarge:
		e = newError(CodePayloadTooLarge, "the request body is larger than 64 KiB", map[string]any{"limit_bytes": MaxBodyBytes})
	case http.StatusUnsupportedMediaType:
		e = newError(CodeUnsupportedMediaType, "the request body must be application/json", map[string]any{"content_type": "text/plain"})
	case http.StatusTooManyRequests:
		e = newError(CodeRateLimited, "too many requests", nil)
	case http.StatusServiceUnavailable:
		e = newError(CodeUnavailable, "the service is temporarily unavailable", nil)
	default:
		e = newError(CodeInternal, "internal error", nil)
	}
	return ErrorEnvelope{Success: false, Error: e, Meta: exampleMeta()}
}

// jsonValue returns v as its generic JSON value (what a client decodes).
func jsonValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}
