# METADATA
# title: fleetapi route authorization
# description: |
#   Decides whether the caller may use one API route.
#
#   Input (schemas/input.json): input.request {method, route} names the route
#   by its template ("/events/{id}", never the raw path); input.token
#   {id, permissions} and input.account {id, type, manager_id, active,
#   expired, read_only, privileges} are the caller's facts. Nothing else is
#   read.
#
#   decision is always defined: {"allow": true} or {"allow": false, "code",
#   "message", "details"}. When several denials apply, the first of this
#   list wins: ACCOUNT_INACTIVE (inactive, or an unknown account type) >
#   ACCOUNT_EXPIRED > TOKEN_PERMISSION_DENIED > PRIVILEGE_REQUIRED >
#   READ_ONLY_ACCOUNT. Missing or malformed account facts count against the
#   caller (fail closed).
#
#   permissions is the effective permission object shown by GET /me.
package fleet.authz

# routes are the API routes, "METHOD /template", that permissions reports on.
routes := [
	"GET /me",
	"GET /services",
	"GET /services/due",
	"POST /passengers",
	"GET /reports",
	"GET /events",
	"GET /events/{id}",
]

# account_types are the account types that may use the API at all.
account_types := {"admin", "manager", "user", "subaccount"}

# all_privileges are held by every account that is not a subaccount.
all_privileges := ["event_notifications", "reports"]

# route_privilege maps a route to the privilege a subaccount needs for it.
route_privilege := {
	"GET /reports": "reports",
	"GET /events": "event_notifications",
	"GET /events/{id}": "event_notifications",
}

# open_routes need no token permission: any valid token reads its own account.
open_routes := {"GET /me"}

route_key := sprintf("%s %s", [input.request.method, input.request.route])

decision := deny("ACCOUNT_INACTIVE", "the account is inactive", {}) if {
	not input.account.active == true
} else := deny("ACCOUNT_INACTIVE", "the account type is not recognised", {"account_type": input.account.type}) if {
	not input.account.type in account_types
} else := deny("ACCOUNT_EXPIRED", "the account has expired", {}) if {
	not input.account.expired == false
} else := deny(
	"TOKEN_PERMISSION_DENIED",
	sprintf("the token does not grant %s", [route_key]),
	{"method": input.request.method, "route": input.request.route},
) if {
	not token_permits
} else := deny(
	"PRIVILEGE_REQUIRED",
	sprintf("the subaccount lacks the %s privilege", [missing_privilege]),
	{"privilege": missing_privilege},
) if {
	missing_privilege
} else := deny("READ_ONLY_ACCOUNT", "the account is read-only", {}) if {
	read_only
	input.request.method != "GET"
} else := {"allow": true}

deny(code, message, details) := {
	"allow": false,
	"code": code,
	"message": message,
	"details": details,
}

# token_permits: the token's permissions cover the route ("*", "METHOD *"
# or the exact "METHOD /template"), or the route needs no permission.
token_permits if route_key in open_routes

token_permits if "*" in input.token.permissions

token_permits if sprintf("%s *", [input.request.method]) in input.token.permissions

token_permits if route_key in input.token.permissions

# missing_privilege is the privilege the route needs and the account lacks.
missing_privilege := p if {
	p := route_privilege[route_key]
	not p in effective_privileges
}

# effective_privileges: every privilege for admins, managers and users; a
# subaccount's own known privileges, sorted; none for anything else.
effective_privileges := all_privileges if {
	input.account.type in {"admin", "manager", "user"}
} else := sort({p | some p in input.account.privileges; p in all_privileges}) if {
	input.account.type == "subaccount"
} else := []

# read_only is true unless the account is explicitly writable.
read_only := not_writable if {
	not_writable := input.account.read_only != false
} else := true

# permissions is the effective permission object of GET /me (DESIGN §5).
permissions := {
	"read_only": read_only,
	"privileges": effective_privileges,
	"token": object.get(input, ["token", "permissions"], []),
	"routes": {r: route_allowed(r) | some r in routes},
}

route_allowed(r) := d.allow if {
	[method, template] := split(r, " ")
	d := decision with input.request as {"method": method, "route": template}
}
