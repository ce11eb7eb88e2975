# METADATA
# title: fleetapi route authorization
# description: |
#   Decides whether the caller may use one API route.
#
#   Input (schemas/input.json): input.request {method, route} names the route
#   by its template ("/events/{id}", never the raw path); input.token
#   {id, permissions} and input.account {id, type, manager_id, active,
#   expired, read_only, privileges, chain, chain_complete} are the caller's
#   facts, where chain lists the accounts above the caller, nearest first,
#   as {id, type, active, expired, read_only}, and chain_complete is true
#   when that chain could be loaded whole (at most three accounts, docs/design.md
#   §2's fixed levels); an incomplete chain is denied (ACCOUNT_INACTIVE,
#   "the managing accounts are not known"). Nothing else is read.
#
#   State flows down the tree (docs/design.md §2): the caller can use the API only
#   when it and every account above it is active and not expired, and it is
#   read-only when it or any account above it is. Admins aside: an admin in
#   the chain (only ever at its top) passes nothing down.
#
#   decision is always defined: {"allow": true} or {"allow": false, "code",
#   "message", "details"}. When several denials apply, the first of this
#   list wins: ACCOUNT_INACTIVE (inactive, or an unknown account type) >
#   ACCOUNT_EXPIRED > ACCOUNT_INACTIVE or ACCOUNT_EXPIRED of an account above
#   (the nearest one that cannot use the API; inactive before expired for
#   that account) > TOKEN_PERMISSION_DENIED > PRIVILEGE_REQUIRED (a route
#   no subaccount may use, then a privilege the subaccount lacks) >
#   READ_ONLY_ACCOUNT (the account itself, then the nearest account above).
#   The account-state and read-only denials name the account that caused
#   them in details.account_id. Missing or malformed account facts count
#   against the caller (fail closed).
#
#   permissions is the effective permission object shown by GET /me.
# schemas:
#   - input: schema.input
package fleet.authz

# routes are the API routes, "METHOD /template", that permissions reports on:
# data.fleet.api.routes, which package policy generates from tenancy.Routes()
# (the one list of routes), so that no route can be missing here.
routes := data.fleet.api.routes

# account_types are the account types that may use the API at all.
account_types := {"admin", "manager", "user", "subaccount"}

# all_privileges are held by every account that is not a subaccount.
all_privileges := ["event_notifications", "reports"]

# route_privilege maps a route to the privilege a subaccount needs for it.
route_privilege := {
	"GET /reports": "reports",
	"GET /events": "event_notifications",
	"GET /events/{id}": "event_notifications",
	"GET /notifications": "event_notifications",
	"GET /notifications/{id}": "event_notifications",
	"GET /notifications/stream": "event_notifications",
	"GET /webhooks": "event_notifications",
	"POST /webhooks": "event_notifications",
	"GET /webhooks/{id}": "event_notifications",
	"PATCH /webhooks/{id}": "event_notifications",
	"DELETE /webhooks/{id}": "event_notifications",
	"POST /webhooks/{id}/rotate-secret": "event_notifications",
	"POST /webhooks/{id}/test": "event_notifications",
	"GET /webhooks/{id}/deliveries": "event_notifications",
	"POST /webhooks/{id}/deliveries/{delivery_id}/retry": "event_notifications",
	"GET /zones": "event_notifications",
	"POST /zones": "event_notifications",
	"GET /zones/{id}": "event_notifications",
	"PATCH /zones/{id}": "event_notifications",
	"DELETE /zones/{id}": "event_notifications",
}

# not_for_subaccounts are the routes no subaccount may use, whatever its
# privileges and token (docs/design.md §14: subaccounts never ingest; §15:
# subaccounts write no event rules, service records or reports, which
# belong to their parent and reach devices not granted to them, and no
# zones: a zone is shared by every rule of the parent, so subaccounts read
# zones with event_notifications and never write them). The
# denial is PRIVILEGE_REQUIRED with details.account_type "subaccount": no
# privilege grants them, so details.privilege is absent.
not_for_subaccounts := {
	"POST /readings",
	"POST /events",
	"PATCH /events/{id}",
	"DELETE /events/{id}",
	"POST /services",
	"PATCH /services/{id}",
	"DELETE /services/{id}",
	"POST /services/{id}/done",
	"POST /reports",
	"PATCH /reports/{id}",
	"DELETE /reports/{id}",
	"POST /zones",
	"PATCH /zones/{id}",
	"DELETE /zones/{id}",
}

# open_routes need no token permission: any valid token reads its own account.
open_routes := {"GET /me"}

route_key := sprintf("%s %s", [input.request.method, input.request.route])

# Equivalent mutants of `policy test --mutate` (docs/policy.md §11.2): the
# guards `some _ in blocked`, `some _ in read_only_above` and
# `missing_privilege` below restate what the branch's value already needs
# (blocked[0], read_only_above[0], missing_privilege): without them the
# value is undefined when the list is empty or no privilege is missing, and
# Rego then goes on to the next else, exactly as when the guard fails.
# mutation: equivalent 2b6d1828a6d7 delete `some _ in blocked` (inactive managing account): blocked[0] in the value needs it
# mutation: equivalent ac0dd3e74b07 delete `some _ in blocked` (unknown managing type): blocked[0] in the value needs it
# mutation: equivalent 84fa5982e943 body → true (expired managing account): blocked[0].id in the value needs `some _ in blocked`
# mutation: equivalent 1cccca9be3c3 body → true (PRIVILEGE_REQUIRED): missing_privilege in the value needs the guard
# mutation: equivalent 4542bfa9c860 delete `some _ in read_only_above`: read_only_above[0] in the value needs it
decision := deny("ACCOUNT_INACTIVE", "the account is inactive", own) if {
	not input.account.active == true
} else := deny(
	"ACCOUNT_INACTIVE",
	"the account type is not recognised",
	object.union(own, {"account_type": object.get(input, ["account", "type"], null)}),
) if {
	# object.get, not input.account.type: OPA evaluates the operand of
	# `in` outside the `not`, so a missing type would make this undefined
	# rather than true
	not object.get(input, ["account", "type"], null) in account_types
} else := deny("ACCOUNT_EXPIRED", "the account has expired", own) if {
	not input.account.expired == false
} else := deny("ACCOUNT_INACTIVE", "the managing accounts are not known", own) if {
	not chain_known
} else := deny("ACCOUNT_INACTIVE", "a managing account is inactive", {"account_id": blocked[0].id}) if {
	some _ in blocked
	not blocked[0].active == true
} else := deny(
	"ACCOUNT_INACTIVE",
	"the type of a managing account is not recognised",
	{"account_id": blocked[0].id},
) if {
	some _ in blocked
	not object.get(blocked[0], "type", null) in account_types
} else := deny("ACCOUNT_EXPIRED", "a managing account has expired", {"account_id": blocked[0].id}) if {
	some _ in blocked
} else := deny(
	"TOKEN_PERMISSION_DENIED",
	sprintf("the token does not grant %s", [route_key]),
	{"method": input.request.method, "route": input.request.route},
) if {
	not token_permits
} else := deny(
	"PRIVILEGE_REQUIRED",
	sprintf("subaccounts may not use %s", [route_key]),
	{"account_type": "subaccount"},
) if {
	route_key in not_for_subaccounts
	input.account.type == "subaccount"
} else := deny(
	"PRIVILEGE_REQUIRED",
	sprintf("the subaccount lacks the %s privilege", [missing_privilege]),
	{"privilege": missing_privilege},
) if {
	missing_privilege
} else := deny("READ_ONLY_ACCOUNT", "the account is read-only", own) if {
	not input.account.read_only == false
	input.request.method != "GET"
} else := deny("READ_ONLY_ACCOUNT", "a managing account is read-only", {"account_id": read_only_above[0]}) if {
	some _ in read_only_above
	input.request.method != "GET"
} else := {"allow": true}

# own names the calling account in the details of a denial it caused.
own := {"account_id": object.get(input, ["account", "id"], null)}

# chain_known: input.account.chain lists the accounts above the caller,
# each an object with a numeric id, and input.account.chain_complete says
# it is the whole chain (the Go side marks a chain it could not load whole:
# a missing row, a loop, more accounts than the fixed levels allow).
# Anything else fails closed.
chain_known if {
	input.account.chain_complete == true
	is_array(input.account.chain)
	every a in input.account.chain {
		is_number(a.id)
	}
}

# governing are the accounts above the caller whose state flows down to it,
# nearest first: every entry of the chain but admins. An entry without a
# type is not an admin.
governing := [a | some a in input.account.chain; not a.type == "admin"]

# blocked are the governing accounts that cannot use the API themselves,
# nearest first; the first one is named by the denial.
blocked := [a | some a in governing; not usable(a)]

usable(a) if {
	a.active == true
	a.type in account_types
	a.expired == false
}

# read_only_above are the ids of the governing accounts that are not
# explicitly writable, nearest first.
read_only_above := [a.id | some a in governing; not a.read_only == false]

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

# read_only is true unless the account and every governing account above
# it are explicitly writable (and the accounts above are known).
read_only := false if {
	input.account.read_only == false
	chain_known
	count(read_only_above) == 0
} else := true

# permissions is the effective permission object of GET /me (docs/design.md §5).
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
