package api

import (
	"github.com/go-fuego/fuego"

	"github.com/fleetapi/fleetapi/storage"
)

// registerObjects declares GET /objects, a list route of the objects
// resource (the devices; its rows are their own wire form).
func (s *Server) registerObjects(g *fuego.Server) {
	listRoute(g, s, storage.Objects, same[storage.Object], authErrors(), []fuego.RouteOption{
		fuego.OptionOperationID("get_objects"), fuego.OptionTags("Fleet"),
		fuego.OptionSummary("Paged list of devices"),
		fuego.OptionDescription("The devices (objects) the caller may see: an admin every device, a manager its own and its managed accounts' devices, " +
			"a user its own, a subaccount those of its parent granted to it. Needs the token permission GET /objects."),
		respondsPage(objectSchema(), []storage.Object{exampleObject()}),
	})
}

// objectSchema is the Object component.
func objectSchema() wireType {
	return wireType{name: "Object", value: storage.Object{}, description: "A device (object) of the fleet (DESIGN §9).", fields: map[string][]fieldOpt{
		"id":           {desc("Id of the device."), minimum(1)},
		"imei":         {minLen(1), maxLen(50), desc("IMEI of the device, unique across the platform.")},
		"account_id":   {minimum(1), desc("Id of the account that owns the device.")},
		"name":         {desc("Name of the device.")},
		"odometer":     {minimum(0), desc("Current odometer (km).")},
		"engine_hours": {minimum(0), desc("Current engine hours (h).")},
	}}
}

func exampleObject() storage.Object {
	return storage.Object{ID: 5, IMEI: "356938035643809", AccountID: 4, Name: "Truck 7", Odometer: 120345, EngineHours: 3400}
}
