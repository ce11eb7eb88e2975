package api

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/policy"
	"github.com/fleetapi/fleetapi/storage"
	"github.com/fleetapi/fleetapi/tenancy"
)

// registerGrants declares GET and PUT /accounts/{id}/objects (docs/design.md §9):
// the devices granted to a subaccount.
func (s *Server) registerGrants(g *fuego.Server) {
	d := storage.Objects.Descriptor
	fuego.Get(g, "/accounts/{id}/objects", s.getAccountObjects, routeOptions(oneErrors(),
		listParams(d, accountObjectsList(exampleManagedAccount().ID)), []fuego.RouteOption{
			fuego.OptionOperationID("get_account_objects"), fuego.OptionTags("Account"),
			fuego.OptionSummary("Paged list of the devices granted to a subaccount"),
			fuego.OptionDescription("The devices granted to a subaccount in the caller's management scope (a subaccount may read its own); " +
				"an account outside the scope is 404, an account that is not a subaccount 400 INVALID_PARAMETER (parameter id). " +
				"Needs the token permission GET /accounts/{id}/objects."),
			respondsPage(objectSchema(), []storage.Object{exampleObject()}),
		}, pathID("id", "Id of the subaccount.", exampleManagedAccount().ID))...)
	fuego.Put(g, "/accounts/{id}/objects", s.putAccountObjects, routeOptions(changeErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("replace_account_objects"), fuego.OptionTags("Account"),
		fuego.OptionSummary("Replace the devices granted to a subaccount"),
		fuego.OptionDescription("Replaces the grants of a subaccount in the caller's management scope with the listed devices, each owned by " +
			"the subaccount's parent: any other device, unknown or another account's, is 403 MANAGEMENT_DENIED (device_not_owned), " +
			"the same answer for both. A subaccount cannot grant itself devices (own_account). An account that is not a subaccount " +
			"is 400 INVALID_PARAMETER (parameter id), before the management decision. Answers the granted devices, ordered by id. A PUT is idempotent by itself: no Idempotency-Key. " +
			"Needs the token permission PUT /accounts/{id}/objects and write access."),
		takesBody(grantsInputSchema(), exampleGrantsInput()),
		respondsList(objectSchema(), []storage.Object{exampleObject()}),
		documented(func(d *operationDoc) { d.envelopeName = "GrantedObjects" }),
	}, pathID("id", "Id of the subaccount.", exampleManagedAccount().ID))...)
}

// imeiPattern is what the management API accepts as a device's IMEI
// (docs/design.md §9): 1–50 letters, digits and '-'.
var imeiPattern = regexp.MustCompile(`^[A-Za-z0-9-]{1,50}$`)

// maxGrants bounds the devices of one PUT /accounts/{id}/objects.
const maxGrants = 1000

// GrantsInput is the body of PUT /accounts/{id}/objects.
type GrantsInput struct {
	IMEI []string `json:"imei"`
}

// grantsFrom validates a grants body: the list is required (empty for no
// grants), each IMEI valid and named once.
func grantsFrom(in GrantsInput, faults textFaults) ([]string, error) {
	v := validation{}
	seen := map[string]bool{}
	switch {
	case in.IMEI == nil:
		v["imei"] = "required: a list of device IMEIs (empty for none)"
	case len(in.IMEI) > maxGrants:
		v["imei"] = fmt.Sprintf("at most %d devices", maxGrants)
	}
	for _, m := range in.IMEI {
		switch {
		case !imeiPattern.MatchString(m):
			v["imei"] = "each 1 to 50 letters, digits or '-'"
		case seen[m]:
			v["imei"] = "each device at most once"
		}
		seen[m] = true
	}
	for f, reason := range faults {
		v[f] = reason
	}
	return in.IMEI, v.err("the grants")
}

// subaccountTarget loads the account id in the caller's management scope
// (404 outside) and requires a subaccount: another account type is 400
// INVALID_PARAMETER naming the path parameter id (it is no body field).
func (s *Server) subaccountTarget(ctx context.Context, m manager, id int64) (*policy.TargetInput, error) {
	a, target, err := s.target(ctx, m, id)
	if err != nil {
		return nil, err
	}
	if a.Type != tenancy.Subaccount {
		return nil, invalidParam("id", "devices are granted to subaccounts only; account "+fmt.Sprint(id)+" is a "+string(a.Type))
	}
	return target, nil
}

// accountObjectsList is the list GET /accounts/{id}/objects of the
// subaccount id, to which its cursors belong: each subaccount's is a list
// of its own.
func accountObjectsList(id int64) string { return fmt.Sprintf("/accounts/%d/objects", id) }

// getAccountObjects answers GET /accounts/{id}/objects.
func (s *Server) getAccountObjects(c fuego.ContextNoBody) (*Envelope[[]storage.Object], error) {
	id, err := idParam(c)
	if err != nil {
		return nil, err
	}
	list := accountObjectsList(id)
	req, err := parseListRequest(c.Request().URL.RawQuery, list, storage.Objects.Descriptor)
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	m, err := s.managerFrom(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := s.subaccountTarget(ctx, m, id); err != nil {
		return nil, err
	}
	page, err := s.cfg.Store.GrantedObjects(ctx, m.scope, id, req)
	if err != nil {
		return nil, writeError(err, "", "")
	}
	meta, err := listMeta(storage.Objects.Descriptor, list, req, page.Total, page.Next)
	if err != nil {
		return nil, err
	}
	return &Envelope[[]storage.Object]{Data: page.Items, Meta: meta}, nil
}

// putAccountObjects answers PUT /accounts/{id}/objects: 200 with the
// granted devices.
func (s *Server) putAccountObjects(c fuego.ContextWithBody[GrantsInput]) (*Envelope[[]storage.Object], error) {
	id, err := idParam(c)
	if err != nil {
		return nil, err
	}
	ctx := c.Context()
	w, err := managementWrite[GrantsInput, []string]{validate: grantsFrom}.open(s, ctx, c.Request())
	if err != nil {
		return nil, err
	}
	imei := w.value
	target, err := s.subaccountTarget(ctx, w.manager, id)
	if err != nil {
		return nil, err
	}
	if target.OwnedIMEI, err = s.cfg.Store.ParentDevices(ctx, w.scope, id, imei); err != nil {
		return nil, writeError(err, "", "")
	}
	if err := s.decideManagement(ctx, w.manager, policy.ActionGrantsReplace, target, map[string]any{"imei": anys(imei)}); err != nil {
		return nil, err
	}
	granted, err := s.cfg.Store.ReplaceGrants(ctx, w.scope, actor(ctx, w.manager), id, imei)
	if errors.Is(err, storage.ErrDeviceNotOwned) {
		return nil, newError(CodeManagementDenied, "a device is not owned by the subaccount's parent", map[string]any{"reason": "device_not_owned"})
	}
	if err != nil {
		return nil, writeError(err, "", "")
	}
	return &Envelope[[]storage.Object]{Data: granted}, nil
}

// grantsInputSchema is the GrantsInput component, the body of PUT
// /accounts/{id}/objects.
func grantsInputSchema() wireType {
	return wireType{name: "GrantsInput", value: GrantsInput{}, required: []string{"imei"},
		description: "The devices to grant, replacing the current grants (docs/design.md §9). Unknown and repeated keys are rejected.",
		fields: map[string][]fieldOpt{
			"imei": {typed(openapi3.TypeArray), schemaOpt(func(s *openapi3.Schema) {
				n := uint64(maxGrants)
				s.MaxItems = &n
				s.UniqueItems = true
				s.Items = openapi3.NewSchemaRef("", openapi3.NewStringSchema().WithMinLength(1).WithMaxLength(50).WithPattern(imeiPattern.String()))
			}), desc("IMEIs of devices owned by the subaccount's parent, each once; empty for none.")},
		}}
}

func exampleGrantsInput() GrantsInput {
	return GrantsInput{IMEI: []string{exampleObject().IMEI}}
}
