package api

import (
	"fmt"
	"net/http"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
)

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

// errorResponses documents the error envelope for the given statuses.
func errorResponses(statuses ...int) []fuego.RouteOption {
	out := make([]fuego.RouteOption, 0, len(statuses))
	for _, st := range statuses {
		out = append(out, fuego.OptionAddResponse(st, http.StatusText(st), fuego.Response{Type: ErrorEnvelope{}}))
	}
	return out
}

func fieldSchema(k storage.FieldKind) *openapi3.Schema {
	switch k {
	case storage.KindInt:
		return openapi3.NewInt64Schema()
	case storage.KindBool:
		return openapi3.NewStringSchema().WithEnum("true", "false")
	case storage.KindDate:
		return openapi3.NewStringSchema().WithFormat("date")
	case storage.KindTime:
		return openapi3.NewStringSchema().WithFormat("date-time")
	}
	return openapi3.NewStringSchema()
}

// listParams documents the shared list parameters of spec §4.2 with their
// bounds, defaults and the resource's sort enumeration, and one exact-match
// filter per field.
func listParams(l storage.Listing) []fuego.RouteOption {
	sorts := make([]any, 0, len(l.Fields)+1)
	for _, f := range l.SortFields() {
		sorts = append(sorts, f)
	}
	opts := []fuego.RouteOption{
		queryParam(paramPage, "Page number.", openapi3.NewInt32Schema().WithMin(1).WithMax(maxPage).WithDefault(1)),
		queryParam(paramPerPage, "Items per page.", openapi3.NewInt32Schema().WithMin(1).WithMax(maxPerPage).WithDefault(defaultPerPage)),
		queryParam(paramSearch, "Case-insensitive substring match over "+fmt.Sprint(l.Search)+
			"; surrounding whitespace is trimmed; %, _ and \\ match themselves. Applied after the caller's scope.",
			openapi3.NewStringSchema().WithMinLength(minSearch).WithMaxLength(maxSearch)),
		queryParam(paramOrder, "Sort direction.", openapi3.NewStringSchema().WithEnum("asc", "desc").WithDefault("asc")),
		queryParam(paramSort, "Field used for ordering; the id breaks ties.", openapi3.NewStringSchema().WithEnum(sorts...).WithDefault(l.ID)),
	}
	for _, f := range l.Fields {
		desc := "Exact-match filter on " + f.Name + "."
		if f.Kind == storage.KindTextList {
			desc = "Matches rows whose " + f.Name + " list contains the value."
		}
		if f.Kind == storage.KindObject {
			desc = "Matches rows whose " + f.Name + " equals this JSON object."
		}
		opts = append(opts, queryParam(f.Name, desc, fieldSchema(f.Kind)))
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
