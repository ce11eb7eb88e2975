package api

import (
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
)

// The OpenAPI document is declared beside each route, in the route's
// options: Fuego's own options say the operationId, tag, summary,
// description, parameters and error statuses; the options below say what
// Fuego's cannot (parameter bounds, enums and examples; the success
// response's envelope, schema and example; the request body's). The
// operations Fuego generates carry all of it, and finishOpenAPI
// (openapi_doc.go) builds the published document from them alone: there
// is no second list of routes, schemas or examples.

// paramSchema completes the schema of the parameter in/name that an
// earlier Fuego option declared (fuego.OptionQuery, OptionQueryInt,
// OptionHeader, OptionPath): Fuego v0.20's parameter options carry a type
// and a default but no bounds, enums, lengths, patterns or formats.
func paramSchema(in, name string, complete func(*openapi3.Schema)) fuego.RouteOption {
	return func(r *fuego.BaseRoute) {
		p := r.Operation.Parameters.GetByInAndName(in, name)
		if p == nil {
			panic(fmt.Sprintf("api: paramSchema: no %s parameter %q declared before", in, name))
		}
		complete(p.Schema.Value)
	}
}

// jsonParam turns the parameter in/name declared before into one whose
// value is the JSON text of an object (content application/json, OpenAPI
// 3.0 §4.7.12.2): the filter on an object field (storage.KindObject),
// which Fuego v0.20 can only declare as a string. example is the
// media type's example (a parameter with content has none of its own).
func jsonParam(in, name string, example map[string]any) fuego.RouteOption {
	return func(r *fuego.BaseRoute) {
		p := r.Operation.Parameters.GetByInAndName(in, name)
		if p == nil {
			panic(fmt.Sprintf("api: jsonParam: no %s parameter %q declared before", in, name))
		}
		// Keys and string values without NUL, as storage.ParseJSONObject
		// wants them; values are not nested (a stored day_time's are not:
		// {"from": "08:00", "to": "18:00"}), so that the rule holds at
		// every depth without a recursive schema.
		value := &openapi3.Schema{Pattern: noNULPattern,
			Not: openapi3.NewSchemaRef("", &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeObject, openapi3.TypeArray},
				Items: openapi3.NewSchemaRef("", &openapi3.Schema{})})}
		obj := openapi3.NewObjectSchema()
		obj.PropertyNames = openapi3.NewSchemaRef("", openapi3.NewStringSchema().WithPattern(noNULPattern))
		obj.AdditionalProperties = openapi3.AdditionalProperties{Schema: openapi3.NewSchemaRef("", value)}
		p.Schema = nil
		p.Content = openapi3.NewContentWithJSONSchema(obj)
		p.Content.Get("application/json").Example = example
	}
}

// paramExample sets the example of the parameter in/name declared before
// (Fuego's ParamExample writes a named example; the document shows one
// value, as a client's generated code reads it).
func paramExample(in, name string, example any) fuego.RouteOption {
	return func(r *fuego.BaseRoute) {
		p := r.Operation.Parameters.GetByInAndName(in, name)
		if p == nil {
			panic(fmt.Sprintf("api: paramExample: no %s parameter %q declared before", in, name))
		}
		p.Example = example
	}
}

// pathID declares the integer path parameter name (minimum 1) with an
// example id (the id of the operation's response example).
func pathID(name, description string, example int64) []fuego.RouteOption {
	return []fuego.RouteOption{
		fuego.OptionPath(name, description, fuego.ParamInteger()),
		paramSchema(openapi3.ParameterInPath, name, func(s *openapi3.Schema) { s.WithFormat("int64").WithMin(1) }),
		paramExample(openapi3.ParameterInPath, name, example),
	}
}

// errorResponses declares the error statuses a route can answer. The
// finished document refers each of them to its shared response in
// components.responses (the error envelope, the codes of that status).
func errorResponses(statuses ...int) []fuego.RouteOption {
	out := make([]fuego.RouteOption, 0, len(statuses))
	for _, st := range statuses {
		out = append(out, fuego.OptionAddResponse(st, http.StatusText(st), fuego.Response{Type: ErrorEnvelope{}}))
	}
	return out
}

// authErrors are the error statuses of every authenticated operation that
// takes no body.
func authErrors() []fuego.RouteOption {
	return errorResponses(http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden,
		http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable)
}

// oneErrors are the error statuses of an operation on one id: authErrors
// and 404.
func oneErrors() []fuego.RouteOption {
	return routeOptions(authErrors(), errorResponses(http.StatusNotFound))
}

// changeErrors are the error statuses of a write with a JSON body on one
// id: oneErrors, 413 and 415.
func changeErrors() []fuego.RouteOption {
	return routeOptions(oneErrors(), errorResponses(http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType))
}

// writeErrors are the error statuses of a management create: changeErrors
// and 409.
func writeErrors() []fuego.RouteOption {
	return routeOptions(changeErrors(), errorResponses(http.StatusConflict))
}

// idempotentCreate declares a create (201) that takes an Idempotency-Key;
// header describes the key.
func idempotentCreate(header string) fuego.RouteOption {
	return func(r *fuego.BaseRoute) {
		fuego.OptionDefaultStatusCode(http.StatusCreated)(r)
		fuego.OptionHeader("Idempotency-Key", header)(r)
		paramSchema(openapi3.ParameterInHeader, "Idempotency-Key", func(s *openapi3.Schema) {
			s.WithMinLength(1).WithMaxLength(maxIdempotencyKey).WithPattern(`^[!-~]+$`)
		})(r)
	}
}

// idempotencyKeyHeader is the description of the Idempotency-Key of a
// create.
const idempotencyKeyHeader = "Makes a retried create return the first response; the same key with another body is 409 IDEMPOTENCY_KEY_REUSED."

// operationDoc is what the document says of an operation beyond Fuego's
// options: the success response (its envelope and data component schemas,
// and an example) and the request body. The options below store it in the
// generated operation's extensions; finishOpenAPI reads it from there and
// publishes none of the extensions.
type operationDoc struct {
	// data is the wire type of the success response's data; list and
	// paged say whether data is a list and the envelope's meta a page.
	data        wireType
	list, paged bool
	example     any
	// noContent marks an operation whose success answers no body (204).
	noContent bool
	// stream marks an operation whose success is a stream of Server-Sent
	// Events (text/event-stream), each event's data one data item.
	stream bool
	// request is the wire type of the request body, with its example.
	request        *wireType
	requestExample any
	// envelopeName, when set, names the success envelope (an unpaged list
	// of a type that also has a paged one).
	envelopeName string
}

// envelope is the name of the success envelope's component schema.
func (d *operationDoc) envelope() string {
	if d.envelopeName != "" {
		return d.envelopeName
	}
	if d.list {
		return d.data.name + "List"
	}
	return d.data.name + "Response"
}

// docExtension is the extension key that carries an operationDoc.
const docExtension = "x-fleetapi-doc"

// documented lets f complete the route's operationDoc.
func documented(f func(*operationDoc)) fuego.RouteOption {
	return func(r *fuego.BaseRoute) {
		if r.Operation.Extensions == nil {
			r.Operation.Extensions = map[string]any{}
		}
		d, _ := r.Operation.Extensions[docExtension].(*operationDoc)
		if d == nil {
			d = &operationDoc{}
			r.Operation.Extensions[docExtension] = d
		}
		f(d)
	}
}

// respondsOne declares the success response: one item of the wire type
// data, with example as the envelope's data.
func respondsOne[W any](data wireType, example W) fuego.RouteOption {
	return documented(func(d *operationDoc) {
		d.data, d.example = data, Envelope[W]{Success: true, Data: example, Meta: exampleMeta()}
	})
}

// respondsEventStream declares the success response of a stream of
// Server-Sent Events (text/event-stream) whose data are of the wire type
// data, with example as one event's data.
func respondsEventStream[W any](data wireType, example W) fuego.RouteOption {
	return documented(func(d *operationDoc) {
		d.data, d.example, d.stream = data, example, true
	})
}

// respondsList declares the success response: an unpaged list of the wire
// type data.
func respondsList[W any](data wireType, example []W) fuego.RouteOption {
	return documented(func(d *operationDoc) {
		d.data, d.list, d.example = data, true, Envelope[[]W]{Success: true, Data: example, Meta: exampleMeta()}
	})
}

// respondsPage declares the success response: a page of the wire type data
// (listRoute's routes).
func respondsPage[W any](data wireType, example []W) fuego.RouteOption {
	return documented(func(d *operationDoc) {
		d.data, d.list, d.paged = data, true, true
		d.example = Envelope[[]W]{Success: true, Data: example, Meta: exampleListMeta(int64(len(example)))}
	})
}

// takesBody declares the request body: the wire type body, with example.
func takesBody(body wireType, example any) fuego.RouteOption {
	return documented(func(d *operationDoc) { d.request, d.requestExample = &body, example })
}

// respondsNoContent declares a success response without a body (204).
func respondsNoContent() fuego.RouteOption {
	return documented(func(d *operationDoc) { d.noContent = true })
}

// pagingParams declares the page and per_page parameters of a list
// (parseListRequest) and of GET /usage, with storage's bounds and default
// (storage.MaxPage, storage.MaxPerPage, storage.DefaultPerPage).
func pagingParams() fuego.RouteOption {
	q := openapi3.ParameterInQuery
	return fuego.GroupOptions(
		fuego.OptionQueryInt(paramPage, "Page number. A page past the end is an empty list.", fuego.ParamDefault(1)),
		paramSchema(q, paramPage, func(s *openapi3.Schema) { s.WithFormat("int32").WithMin(1).WithMax(storage.MaxPage) }),
		fuego.OptionQueryInt(paramPerPage, "Items per page.", fuego.ParamDefault(storage.DefaultPerPage)),
		paramSchema(q, paramPerPage, func(s *openapi3.Schema) { s.WithFormat("int32").WithMin(1).WithMax(storage.MaxPerPage) }),
	)
}

// listParams declares the shared list parameters of docs/api.md §6 with their
// bounds, defaults and the resource's sort enumeration, and one exact-match
// filter per filterable field: the parameters parseListRequest reads. list
// is the list's path in the examples (with the example of its path
// parameters), to which the example cursor belongs.
func listParams(d *storage.Descriptor, list string) []fuego.RouteOption {
	sorts := []any{}
	for _, f := range d.SortFields() {
		sorts = append(sorts, f)
	}
	q := openapi3.ParameterInQuery
	opts := []fuego.RouteOption{
		pagingParams(),
		fuego.OptionQuery(paramAfter, "Extension beyond the spec (keyset paging): the opaque cursor meta.next of the previous page. "+
			"Returns the items strictly after it in the same order, with the same scope, filters and search; send it to the list that gave it "+
			"with the sort, order, filters and search it was made for (per_page may change), and no page beyond 1. meta.total stays the whole list's total."),
		paramSchema(q, paramAfter, func(s *openapi3.Schema) { s.WithMinLength(1).WithMaxLength(maxCursor).WithPattern(cursorPattern) }),
		paramExample(q, paramAfter, exampleCursor(d, list, exampleFirstCursor(d))),
	}
	if len(d.SearchFields()) > 0 {
		// Declared only where parseListRequest takes it: a resource without
		// searched fields refuses search as an unknown parameter (issue 19
		// item 16).
		opts = append(opts,
			fuego.OptionQuery(paramSearch, "Case-insensitive substring match over "+strings.Join(d.SearchFields(), " and ")+
				"; surrounding whitespace is trimmed and the rest must be 2 to 100 characters; "+
				"%, _ and \\ match themselves. Applied after the caller's scope and the filters."),
			paramSchema(q, paramSearch, func(s *openapi3.Schema) {
				s.WithMinLength(minSearch).WithMaxLength(maxSearch).WithPattern(searchPattern())
			}))
	}
	opts = append(opts,
		fuego.OptionQuery(paramOrder, "Sort direction.", fuego.ParamDefault(order(d.DefaultDesc()))),
		paramSchema(q, paramOrder, func(s *openapi3.Schema) { s.WithEnum("asc", "desc") }),
		fuego.OptionQuery(paramSort, "Field used for ordering; "+d.ID().Name+" breaks ties, so pages are stable.",
			fuego.ParamDefault(d.ID().Name)),
		paramSchema(q, paramSort, func(s *openapi3.Schema) { s.WithEnum(sorts...) }),
	)
	for _, f := range d.Fields() {
		if f.Filter {
			opts = append(opts, filterParam(f)...)
		}
	}
	if rf, ok := d.RangeField(); ok {
		stamp := "an RFC 3339 timestamp YYYY-MM-DDTHH:MM:SS[.ffffff] then Z or ±HH:MM up to ±15:59, years 0001 to 9999 in UTC"
		opts = append(opts,
			fuego.OptionQuery(paramFrom, fmt.Sprintf("Extension beyond the spec (a range): only items whose %s is at or after this instant, %s.", rf.Name, stamp)),
			paramSchema(q, paramFrom, timestampSchema),
			fuego.OptionQuery(paramTo, fmt.Sprintf("Extension beyond the spec (a range): only items whose %s is before this instant (exclusive), %s.", rf.Name, stamp)),
			paramSchema(q, paramTo, timestampSchema))
	}
	return opts
}

// filterParam declares the exact-match filter on the field f.
func filterParam(f storage.Field) []fuego.RouteOption {
	q := openapi3.ParameterInQuery
	desc := fmt.Sprintf("Exact-match filter on %s.", f.Name)
	switch f.Kind {
	case storage.KindInt, storage.KindInt32:
		lo, hi := f.IntRange()
		return []fuego.RouteOption{
			fuego.OptionQueryInt(f.Name, fmt.Sprintf("Exact-match filter on %s (decimal digits: no sign, leading zeros or spaces).", f.Name)),
			paramSchema(q, f.Name, func(s *openapi3.Schema) {
				s.WithFormat("int64").WithMin(float64(lo))
				if hi < math.MaxInt64 { // int64 is the format's own bound, and a float64 cannot write it exactly
					s.WithMax(float64(hi))
				}
			}),
		}
	case storage.KindBool:
		return []fuego.RouteOption{fuego.OptionQueryBool(f.Name, desc)}
	case storage.KindTextList:
		desc = fmt.Sprintf("Matches rows whose %s list contains the value.", f.Name)
	case storage.KindObject:
		desc = fmt.Sprintf("Matches rows whose %s equals this JSON object, sent as its JSON text (for example {\"from\":\"08:00\"}): "+
			"no \\u0000 and no unpaired surrogate escape in its keys and strings, at any depth; numbers of at most 1000 digits with an "+
			"exponent from -1000 to 1000. The schema admits the flat objects a day_time is ({\"from\":\"06:00\",\"to\":\"20:00\"}); "+
			"nested values are taken too.", f.Name)
		return []fuego.RouteOption{fuego.OptionQuery(f.Name, desc), jsonParam(q, f.Name, map[string]any{"from": "08:00"})}
	case storage.KindDate:
		desc = fmt.Sprintf("Exact-match filter on %s (YYYY-MM-DD, 0001-01-01 to 9999-12-31).", f.Name)
		return []fuego.RouteOption{fuego.OptionQuery(f.Name, desc), paramSchema(q, f.Name, dateSchema)}
	case storage.KindTime:
		desc = fmt.Sprintf("Exact-match filter on %s (RFC 3339 timestamp YYYY-MM-DDTHH:MM:SS[.ffffff] then Z or ±HH:MM up to ±15:59, "+
			"years 0001 to 9999 in UTC).", f.Name)
		return []fuego.RouteOption{fuego.OptionQuery(f.Name, desc), paramSchema(q, f.Name, timestampSchema)}
	}
	return []fuego.RouteOption{fuego.OptionQuery(f.Name, desc)}
}

// exampleFirstCursor is the cursor of the after parameter's example of a
// list of d in its default order: by id, ascending, or newest first from
// the last id.
func exampleFirstCursor(d *storage.Descriptor) storage.Cursor {
	if d.DefaultDesc() {
		return storage.Cursor{Sort: d.ID(), Desc: true, ID: math.MaxInt64}
	}
	return storage.Cursor{Sort: d.ID()}
}

// routeOptions joins option lists.
func routeOptions(lists ...[]fuego.RouteOption) []fuego.RouteOption {
	var out []fuego.RouteOption
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// exampleCursor is the after parameter's example of list, a list of d
// without filters or search: the cursor c (for the default order, the
// position before the first id, so the example lists every row).
func exampleCursor(d *storage.Descriptor, list string, c storage.Cursor) string {
	v, err := encodeCursor(string(d.Resource()), list, storage.ListRequest{}, &c)
	if err != nil {
		panic(fmt.Sprintf("api: example cursor of %s: %v", d.Resource(), err))
	}
	return v
}
