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

// The OpenAPI document is made in two steps. The route options below
// declare, next to each route in registerRoutes, what only the route knows:
// its operationId, tag, summary, description, parameters with their bounds,
// and the error statuses it can answer. Fuego turns them into operations;
// finishOpenAPI (openapi_doc.go) then builds the published document from
// those operations and from schemas generated from the wire types
// (openapi_schemas.go), dropping what Fuego adds on its own.

// queryParam documents a query parameter in the OpenAPI document only: the
// handlers parse and validate the query themselves (Fuego's parameter
// options carry no bounds and answer type errors outside the error table).
func queryParam(name, description string, schema *openapi3.Schema) fuego.RouteOption {
	return func(r *fuego.BaseRoute) {
		r.Operation.AddParameter(&openapi3.Parameter{
			In: openapi3.ParameterInQuery, Name: name, Description: description,
			Schema: openapi3.NewSchemaRef("", schema),
		})
	}
}

// headerParam documents a request header with its schema.
func headerParam(name, description string, schema *openapi3.Schema) fuego.RouteOption {
	return func(r *fuego.BaseRoute) {
		r.Operation.AddParameter(&openapi3.Parameter{
			In: openapi3.ParameterInHeader, Name: name, Description: description,
			Schema: openapi3.NewSchemaRef("", schema),
		})
	}
}

// pathIDParam documents the integer path parameter name (minimum 1) with
// an example id (the id of the operation's response example).
func pathIDParam(name, description string, example int64) fuego.RouteOption {
	return func(r *fuego.BaseRoute) {
		r.Operation.AddParameter(&openapi3.Parameter{
			In: openapi3.ParameterInPath, Name: name, Description: description, Required: true,
			Schema:  openapi3.NewSchemaRef("", openapi3.NewInt64Schema().WithMin(1)),
			Example: example,
		})
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

// fieldSchema is the schema of an exact-match filter on the field f.
func fieldSchema(f storage.Field) *openapi3.Schema {
	switch f.Kind {
	case storage.KindInt, storage.KindInt32:
		lo, hi := f.IntRange()
		s := openapi3.NewInt64Schema().WithMin(float64(lo))
		if hi < math.MaxInt64 { // int64 is the format's own bound, and a float64 cannot write it exactly
			s = s.WithMax(float64(hi))
		}
		return s
	case storage.KindBool:
		return openapi3.NewBoolSchema()
	case storage.KindDate:
		return openapi3.NewStringSchema().WithFormat("date")
	case storage.KindTime:
		return openapi3.NewStringSchema().WithFormat("date-time")
	case storage.KindObject:
		return openapi3.NewStringSchema().WithMinLength(2)
	}
	return openapi3.NewStringSchema()
}

// listParams documents the shared list parameters of spec §4.2 with their
// bounds, defaults and the resource's sort enumeration, and one exact-match
// filter per field.
func listParams(d *storage.Descriptor) []fuego.RouteOption {
	sorts := []any{}
	for _, f := range d.SortFields() {
		sorts = append(sorts, f)
	}
	opts := []fuego.RouteOption{
		queryParam(paramPage, "Page number. A page past the end is an empty list.",
			openapi3.NewInt32Schema().WithMin(1).WithMax(maxPage).WithDefault(1)),
		queryParam(paramPerPage, "Items per page.",
			openapi3.NewInt32Schema().WithMin(1).WithMax(maxPerPage).WithDefault(defaultPerPage)),
		queryParam(paramSearch, "Case-insensitive substring match over "+strings.Join(d.SearchFields(), " and ")+
			"; surrounding whitespace is trimmed and the rest must be 2 to 100 characters; "+
			"%, _ and \\ match themselves. Applied after the caller's scope and the filters.",
			openapi3.NewStringSchema().WithMinLength(minSearch).WithMaxLength(maxSearch)),
		queryParam(paramOrder, "Sort direction.", openapi3.NewStringSchema().WithEnum("asc", "desc").WithDefault("asc")),
		queryParam(paramSort, "Field used for ordering; "+d.ID().Name+" breaks ties, so pages are stable.",
			openapi3.NewStringSchema().WithEnum(sorts...).WithDefault(d.ID().Name)),
	}
	for _, f := range d.Fields() {
		if !f.Filter {
			continue
		}
		desc := fmt.Sprintf("Exact-match filter on %s.", f.Name)
		switch f.Kind {
		case storage.KindTextList:
			desc = fmt.Sprintf("Matches rows whose %s list contains the value.", f.Name)
		case storage.KindObject:
			desc = fmt.Sprintf("Matches rows whose %s equals this JSON object (for example {\"from\":\"08:00\"}).", f.Name)
		case storage.KindDate:
			desc = fmt.Sprintf("Exact-match filter on %s (YYYY-MM-DD, 0001-01-01 to 9999-12-31).", f.Name)
		case storage.KindTime:
			desc = fmt.Sprintf("Exact-match filter on %s (RFC 3339 timestamp YYYY-MM-DDTHH:MM:SS[.ffffff] then Z or ±HH:MM, "+
				"years 0001 to 9999).", f.Name)
		case storage.KindInt, storage.KindInt32:
			desc = fmt.Sprintf("Exact-match filter on %s (decimal digits: no sign, leading zeros or spaces).", f.Name)
		}
		opts = append(opts, queryParam(f.Name, desc, fieldSchema(f)))
	}
	return opts
}

// routeOptions joins option lists.
func routeOptions(lists ...[]fuego.RouteOption) []fuego.RouteOption {
	var out []fuego.RouteOption
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
