# Generated from tenancy.Routes() by `fleetapi policy routes --write`: do not edit.
# fleetapi evaluates its own routes in place of this file's; OPA's tools read it.
package fleet.api

routes := [
	"GET /me",
	"GET /services",
	"GET /services/due",
	"POST /passengers",
	"GET /reports",
	"GET /events",
	"GET /events/{id}",
	"GET /notifications",
	"GET /notifications/stream",
	"GET /notifications/{id}",
	"GET /objects",
	"GET /objects/{id}",
	"GET /accounts",
	"POST /accounts",
	"GET /accounts/{id}",
	"PATCH /accounts/{id}",
	"DELETE /accounts/{id}",
	"GET /audit-events",
	"GET /tokens",
	"POST /tokens",
	"DELETE /tokens/{id}",
	"GET /accounts/{id}/objects",
	"PUT /accounts/{id}/objects",
	"POST /objects",
	"PATCH /objects/{id}",
	"GET /usage",
	"POST /readings",
	"GET /objects/{id}/positions",
]
