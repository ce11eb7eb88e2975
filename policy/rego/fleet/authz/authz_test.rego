package fleet.authz_test

import data.fleet.authz

# base is an active, writable user under an active manager (3) under an
# admin (1), whose token grants everything.
base := {
	"request": {"method": "GET", "route": "/services"},
	"token": {"id": 1, "permissions": ["*"]},
	"account": {
		"id": 7, "type": "user", "manager_id": 3, "active": true,
		"expired": false, "read_only": false, "privileges": [],
		"chain": [manager, admin], "chain_complete": true,
	},
}

admin := {"id": 1, "type": "admin", "active": true, "expired": false, "read_only": false}

manager := {"id": 3, "type": "manager", "active": true, "expired": false, "read_only": false}

user := {"id": 5, "type": "user", "active": true, "expired": false, "read_only": false}

with_account(patch) := object.union(base, {"account": patch})

with_request(method, route) := object.union(base, {"request": {"method": method, "route": route}})

sub(privileges) := with_account({"type": "subaccount", "privileges": privileges})

test_allow_user if {
	authz.decision == {"allow": true} with input as base
}

test_allow_every_account_type if {
	every t in ["admin", "manager", "user", "subaccount"] {
		authz.decision.allow with input as with_account({"type": t})
	}
}

test_inactive if {
	d := authz.decision with input as with_account({"active": false})
	d == {"allow": false, "code": "ACCOUNT_INACTIVE", "message": "the account is inactive", "details": {"account_id": 7}}
}

test_missing_active_fails_closed if {
	authz.decision.code == "ACCOUNT_INACTIVE" with input as object.remove(base, ["account"])
}

test_unknown_type if {
	d := authz.decision with input as with_account({"type": "reseller"})
	d.code == "ACCOUNT_INACTIVE"
	d.details == {"account_id": 7, "account_type": "reseller"}
}

test_expired if {
	d := authz.decision with input as with_account({"expired": true})
	d == {"allow": false, "code": "ACCOUNT_EXPIRED", "message": "the account has expired", "details": {"account_id": 7}}
}

test_inactive_beats_expired if {
	authz.decision.code == "ACCOUNT_INACTIVE" with input as with_account({"active": false, "expired": true})
}

test_token_permission_denied if {
	inp := object.union(base, {"token": {"permissions": ["GET /reports"]}})
	d := authz.decision with input as inp
	d.code == "TOKEN_PERMISSION_DENIED"
	d.message == "the token does not grant GET /services"
	d.details == {"method": "GET", "route": "/services"}
}

test_token_grammar if {
	cases := [
		[["*"], "POST", "/passengers", true],
		[["GET *"], "GET", "/events/{id}", true],
		[["GET *"], "POST", "/passengers", false],
		[["GET /events/{id}"], "GET", "/events/{id}", true],
		[["GET /events/{id}"], "GET", "/events", false],
		[["POST /passengers"], "POST", "/passengers", true],
		[[], "GET", "/services", false],
		[[], "GET", "/me", true],
	]
	every c in cases {
		inp := object.union(with_request(c[1], c[2]), {"token": {"permissions": c[0]}})
		d := authz.decision with input as inp
		d.allow == c[3]
	}
}

test_expired_beats_token if {
	inp := object.union(with_account({"expired": true}), {"token": {"permissions": []}})
	authz.decision.code == "ACCOUNT_EXPIRED" with input as inp
}

test_privilege_required if {
	cases := [
		["/reports", "reports"],
		["/events", "event_notifications"],
		["/events/{id}", "event_notifications"],
		["/notifications", "event_notifications"],
		["/notifications/{id}", "event_notifications"],
		["/notifications/stream", "event_notifications"],
	]
	every c in cases {
		inp := object.union(sub([]), {"request": {"method": "GET", "route": c[0]}})
		d := authz.decision with input as inp
		d.code == "PRIVILEGE_REQUIRED"
		d.details == {"privilege": c[1]}
	}
}

test_privilege_held if {
	inp := object.union(sub(["reports"]), {"request": {"method": "GET", "route": "/reports"}})
	authz.decision.allow with input as inp
}

# Admins, managers and users hold every privilege: each privileged route is
# allowed for them, whatever privileges are stored on the account, and /me
# lists both privileges.
test_every_privilege_for_admin_manager_user if {
	every t in ["admin", "manager", "user"] {
		every r, _ in authz.route_privilege {
			[method, route] := split(r, " ")
			inp := object.union(with_account({"type": t, "privileges": []}), {"request": {"method": method, "route": route}})
			authz.decision == {"allow": true} with input as inp
		}
		p := authz.permissions with input as with_account({"type": t, "privileges": []})
		p.privileges == ["event_notifications", "reports"]
	}
}

# A subaccount holding exactly one privilege may use the routes of that
# privilege and is refused those of the other.
test_privilege_exactly_one if {
	every held in ["reports", "event_notifications"] {
		every r, needed in authz.route_privilege {
			[method, route] := split(r, " ")
			d := authz.decision with input as object.union(sub([held]), {"request": {"method": method, "route": route}})
			d.allow == expect_allow(needed, held, r)
		}
		p := authz.permissions with input as sub([held])
		p.privileges == [held]
	}
}

# expect_allow: a subaccount holding held may use route r needing needed
# when the privilege matches and r is not one no subaccount may use.
expect_allow(needed, held, r) if {
	needed == held
	not r in authz.not_for_subaccounts
} else := false

test_token_beats_privilege if {
	inp := object.union(sub([]), {
		"request": {"method": "GET", "route": "/reports"},
		"token": {"permissions": ["GET /services"]},
	})
	authz.decision.code == "TOKEN_PERMISSION_DENIED" with input as inp
}

test_read_only if {
	inp := object.union(with_account({"read_only": true}), {"request": {"method": "POST", "route": "/passengers"}})
	d := authz.decision with input as inp
	d == {"allow": false, "code": "READ_ONLY_ACCOUNT", "message": "the account is read-only", "details": {"account_id": 7}}
}

test_read_only_may_read if {
	authz.decision.allow with input as with_account({"read_only": true})
}

test_privilege_beats_read_only if {
	inp := object.union(sub([]), {"request": {"method": "GET", "route": "/reports"}})
	authz.decision.code == "PRIVILEGE_REQUIRED" with input as object.union(inp, {"account": {"read_only": true}})
}

test_permissions_user if {
	p := authz.permissions with input as base
	p.read_only == false
	p.privileges == ["event_notifications", "reports"]
	p.token == ["*"]
	every_route_reported(p)
	every _, allowed in p.routes {
		allowed == true
	}
}

# every_route_reported(p): the permissions name exactly the API routes, and
# there are some.
every_route_reported(p) if {
	count(authz.routes) > 0
	object.keys(p.routes) == {r | some r in authz.routes}
}

test_permissions_subaccount if {
	inp := object.union(sub(["reports", "bogus", "reports"]), {
		"token": {"permissions": ["GET *"]},
		"account": {"read_only": true},
	})
	p := authz.permissions with input as inp
	p.read_only == true
	p.privileges == ["reports"]
	p.token == ["GET *"]
	every_route_reported(p)

	# pinned: a write, a route of the privilege held, one of the privilege
	# not held, one without a privilege
	p.routes["POST /passengers"] == false
	p.routes["GET /reports"] == true
	p.routes["GET /events"] == false
	p.routes["GET /services"] == true

	# every route: a GET whose privilege, if any, is held
	every r, allowed in p.routes {
		allowed == sub_reports_allowed(r)
	}
}

# sub_reports_allowed(r): what a read-only subaccount holding "reports"
# with the token "GET *" may use.
sub_reports_allowed(r) := false if {
	not startswith(r, "GET ")
} else := false if {
	not object.get(authz.route_privilege, r, "reports") == "reports"
} else := true

test_permissions_unknown_type if {
	p := authz.permissions with input as object.remove(with_account({"type": "reseller"}), ["token"])
	p.privileges == []

	# privileges stored on an account of an unknown type count for nothing
	q := authz.permissions with input as with_account({"type": "reseller", "privileges": ["reports"]})
	q.privileges == []
	p.token == []
	every _, allowed in p.routes {
		allowed == false
	}
}

test_permissions_read_only_missing_fails_closed if {
	authz.permissions.read_only with input as object.remove(base, ["account"])
}

test_missing_account_named_as_null if {
	authz.decision.details == {"account_id": null} with input as object.remove(base, ["account"])
}

test_unknown_type_missing if {
	d := authz.decision with input as json.remove(base, ["account/type"])
	d.details == {"account_id": 7, "account_type": null}
}

# State flows down the tree (docs/design.md §2): chain lists the accounts above the
# caller, nearest first.

# sub_under(chain) is a subaccount (9) of the user 5 with the given chain.
sub_under(chain) := with_account({"id": 9, "type": "subaccount", "manager_id": 5, "privileges": all_privileges, "chain": chain})

all_privileges := ["reports", "event_notifications"]

# user_under(chain) is the user 7 with the given chain.
user_under(chain) := with_account({"chain": chain})

inactive(a) := object.union(a, {"active": false})

expired(a) := object.union(a, {"expired": true})

read_only_acct(a) := object.union(a, {"read_only": true})

test_chain_allows_every_level if {
	every inp in [
		sub_under([user, manager, admin]),
		user_under([manager, admin]),
		user_under([admin]),
		with_account({"type": "manager", "chain": [admin]}),
		with_account({"type": "admin", "chain": []}),
	] {
		authz.decision == {"allow": true} with input as object.union(inp, {"request": {"method": "POST", "route": "/passengers"}})
	}
}

# every level of the tree: [input, code, account named]
chain_state_cases := [
	[sub_under([inactive(user), manager, admin]), "ACCOUNT_INACTIVE", 5],
	[sub_under([expired(user), manager, admin]), "ACCOUNT_EXPIRED", 5],
	[sub_under([user, inactive(manager), admin]), "ACCOUNT_INACTIVE", 3],
	[sub_under([user, expired(manager), admin]), "ACCOUNT_EXPIRED", 3],
	[user_under([inactive(manager), admin]), "ACCOUNT_INACTIVE", 3],
	[user_under([expired(manager), admin]), "ACCOUNT_EXPIRED", 3],
	[sub_under([user, admin]), "", 0],
]

test_chain_state_every_level if {
	every c in chain_state_cases {
		every route in authz.routes {
			[method, template] := split(route, " ")
			d := authz.decision with input as object.union(c[0], {"request": {"method": method, "route": template}})
			chain_state_expected(d, c[1], c[2], route)
		}
	}
}

# A usable chain allows every route but those no subaccount may use.
chain_state_expected(d, "", _, route) if {
	not route in authz.not_for_subaccounts
	d.allow
}

chain_state_expected(d, "", _, route) if {
	route in authz.not_for_subaccounts
	d.code == "PRIVILEGE_REQUIRED"
}

chain_state_expected(d, code, id, _) if {
	code != ""
	d.allow == false
	d.code == code
	d.details == {"account_id": id}
}

test_chain_messages if {
	d1 := authz.decision with input as sub_under([inactive(user), manager, admin])
	d1 == {
		"allow": false, "code": "ACCOUNT_INACTIVE",
		"message": "a managing account is inactive", "details": {"account_id": 5},
	}
	d2 := authz.decision with input as user_under([expired(manager), admin])
	d2 == {
		"allow": false, "code": "ACCOUNT_EXPIRED",
		"message": "a managing account has expired", "details": {"account_id": 3},
	}
}

test_admin_at_top_passes_nothing_down if {
	top := read_only_acct(expired(inactive(admin)))
	every inp in [sub_under([user, manager, top]), user_under([top]), with_account({"type": "manager", "chain": [top]})] {
		post := object.union(inp, {"request": {"method": "POST", "route": "/passengers"}})
		authz.decision == {"allow": true} with input as post
		authz.permissions.read_only == false with input as post
	}
}

test_chain_nearest_first if {
	d1 := authz.decision with input as sub_under([inactive(user), expired(manager), admin])
	d1.code == "ACCOUNT_INACTIVE"
	d1.details == {"account_id": 5}
	d2 := authz.decision with input as sub_under([expired(user), inactive(manager), admin])
	d2.code == "ACCOUNT_EXPIRED"
	d2.details == {"account_id": 5}
	d3 := authz.decision with input as sub_under([user, expired(inactive(manager)), admin])
	d3.code == "ACCOUNT_INACTIVE"
	d3.details == {"account_id": 3}
}

test_own_state_beats_chain if {
	inp := object.union(sub_under([inactive(user), manager, admin]), {"account": {"expired": true}})
	d := authz.decision with input as inp
	d.code == "ACCOUNT_EXPIRED"
	d.details == {"account_id": 9}
}

test_chain_beats_token if {
	inp := object.union(user_under([expired(manager)]), {"token": {"permissions": []}})
	authz.decision.code == "ACCOUNT_EXPIRED" with input as inp
}

test_chain_missing_fails_closed if {
	d := authz.decision with input as json.remove(base, ["account/chain"])
	d == {
		"allow": false, "code": "ACCOUNT_INACTIVE",
		"message": "the managing accounts are not known", "details": {"account_id": 7},
	}
	authz.permissions.read_only with input as json.remove(base, ["account/chain"])
}

test_chain_incomplete_fails_closed if {
	# a chain the Go side could not load whole (a missing row, a loop, more
	# accounts than the fixed levels allow) is denied, whatever it holds:
	# state never looks better than it is (docs/design.md §2)
	every complete in [false, null, "true", 1] {
		d := authz.decision with input as with_account({"chain_complete": complete})
		d == {
			"allow": false, "code": "ACCOUNT_INACTIVE",
			"message": "the managing accounts are not known", "details": {"account_id": 7},
		}
		authz.permissions.read_only with input as with_account({"chain_complete": complete})
	}
	d := authz.decision with input as json.remove(base, ["account/chain_complete"])
	d.code == "ACCOUNT_INACTIVE"
	authz.decision.allow with input as with_account({"chain_complete": true})
}

test_chain_malformed_fails_closed if {
	# an object whose values look like accounts is not a chain either
	every chain in ["x", {"id": 3}, {"m": manager}, ["x"], [{"type": "manager", "active": true, "expired": false}]] {
		authz.decision.code == "ACCOUNT_INACTIVE" with input as user_under(chain)
	}
}

test_chain_missing_facts_fail_closed if {
	cases := [
		[object.remove(manager, ["active"]), "ACCOUNT_INACTIVE"],
		[object.remove(manager, ["expired"]), "ACCOUNT_EXPIRED"],
		[object.remove(manager, ["type"]), "ACCOUNT_INACTIVE"],
		[object.union(manager, {"type": "reseller"}), "ACCOUNT_INACTIVE"],
	]
	every c in cases {
		d := authz.decision with input as user_under([c[0], admin])
		d.code == c[1]
		d.details == {"account_id": 3}
	}
	d := authz.decision with input as user_under([object.union(manager, {"type": "reseller"})])
	d.message == "the type of a managing account is not recognised"
}

# Read-only is inherited the same way.

post(inp) := object.union(inp, {"request": {"method": "POST", "route": "/passengers"}})

test_read_only_inherited_every_level if {
	cases := [
		[sub_under([read_only_acct(user), manager, admin]), 5],
		[sub_under([user, read_only_acct(manager), admin]), 3],
		[user_under([read_only_acct(manager), admin]), 3],
		[sub_under([read_only_acct(user), read_only_acct(manager), admin]), 5],
		[sub_under([user, object.remove(manager, ["read_only"]), admin]), 3],
	]
	every c in cases {
		d := authz.decision with input as post(c[0])
		d == {
			"allow": false, "code": "READ_ONLY_ACCOUNT",
			"message": "a managing account is read-only", "details": {"account_id": c[1]},
		}
		authz.decision.allow with input as c[0]
		p := authz.permissions with input as c[0]
		p.read_only == true
		p.routes["POST /passengers"] == false
		p.routes["GET /services"] == true
	}
}

test_own_read_only_beats_inherited if {
	inp := object.union(sub_under([read_only_acct(user), manager, admin]), {"account": {"read_only": true}})
	d := authz.decision with input as post(inp)
	d.message == "the account is read-only"
	d.details == {"account_id": 9}
}

test_token_beats_inherited_read_only if {
	inp := object.union(sub_under([read_only_acct(user)]), {"token": {"permissions": ["GET *"]}})
	authz.decision.code == "TOKEN_PERMISSION_DENIED" with input as post(inp)
}

# A permission names one route exactly: never a prefix of others
# (GET /services does not cover GET /services/due), nor a suffix, nor a
# method alone.
test_token_permission_exact_not_prefix if {
	cases := [
		[["GET /services"], "GET", "/services/due", false],
		[["GET /services"], "GET", "/services", true],
		[["GET /services/due"], "GET", "/services", false],
		[["GET /services/due"], "GET", "/services/due", true],
		[["GET /events"], "GET", "/events/{id}", false],
		[["GET /"], "GET", "/services", false],
		[["GET"], "GET", "/services", false],
		[["GET /services/"], "GET", "/services/due", false],
	]
	every c in cases {
		inp := object.union(with_request(c[1], c[2]), {"token": {"permissions": c[0]}})
		d := authz.decision with input as inp
		d.allow == c[3]
	}
	p := authz.permissions with input as object.union(base, {"token": {"permissions": ["GET /services"]}})
	p.routes["GET /services"] == true
	p.routes["GET /services/due"] == false
}

# Read-only blocks every method but GET, not only POST: the account's own
# read-only and the one inherited from an account above.
test_read_only_every_write_method if {
	every method in ["POST", "PUT", "PATCH", "DELETE"] {
		own := authz.decision with input as object.union(with_account({"read_only": true}), {"request": {"method": method, "route": "/x"}})
		own == {"allow": false, "code": "READ_ONLY_ACCOUNT", "message": "the account is read-only", "details": {"account_id": 7}}
		above := authz.decision with input as object.union(user_under([read_only_acct(manager), admin]), {"request": {"method": method, "route": "/x"}})
		above == {
			"allow": false, "code": "READ_ONLY_ACCOUNT",
			"message": "a managing account is read-only", "details": {"account_id": 3},
		}
		authz.decision.allow with input as with_request(method, "/x")
	}
}

# Every entry of the chain needs a numeric id, not only one of them: a
# chain with a known manager and an entry without an id fails closed.
test_chain_every_entry_needs_an_id if {
	cases := [
		[manager, object.remove(admin, ["id"])],
		[object.remove(manager, ["id"]), admin],
		[manager, object.union(admin, {"id": "1"})],
		[manager, null],
	]
	every chain in cases {
		d := authz.decision with input as user_under(chain)
		d == {
			"allow": false, "code": "ACCOUNT_INACTIVE",
			"message": "the managing accounts are not known", "details": {"account_id": 7},
		}
	}
}

# expired must be exactly false and active exactly true: null, a string or
# a number count against the caller, like a missing fact.
test_account_state_must_be_boolean if {
	every v in [null, "false", 0] {
		authz.decision.code == "ACCOUNT_EXPIRED" with input as with_account({"expired": v})
	}
	authz.decision.code == "ACCOUNT_EXPIRED" with input as json.remove(base, ["account/expired"])
	every v in [null, "true", 1] {
		authz.decision.code == "ACCOUNT_INACTIVE" with input as with_account({"active": v})
	}
}

# Subaccounts never ingest (docs/design.md §14): POST /readings is refused
# to a subaccount holding every privilege and a "*" token, before the
# read-only check; a user may, a read-only user may not.
test_readings_never_for_subaccounts if {
	inp := object.union(sub(all_privileges), {"request": {"method": "POST", "route": "/readings"}})
	d := authz.decision with input as inp
	d.code == "PRIVILEGE_REQUIRED"
	d.details == {"account_type": "subaccount"}
	authz.decision.code == "PRIVILEGE_REQUIRED" with input as object.union(inp, {"account": {"read_only": true}})
}

test_readings_token_before_subaccount if {
	inp := object.union(sub(all_privileges), {
		"request": {"method": "POST", "route": "/readings"},
		"token": {"permissions": ["GET *"]},
	})
	authz.decision.code == "TOKEN_PERMISSION_DENIED" with input as inp
}

test_readings_user if {
	authz.decision == {"allow": true} with input as with_request("POST", "/readings")
	d := authz.decision with input as object.union(with_request("POST", "/readings"), {"account": {"read_only": true}})
	d.code == "READ_ONLY_ACCOUNT"
	authz.decision.allow with input as with_request("GET", "/objects/{id}/positions")
	e := authz.decision with input as object.union(with_request("POST", "/readings"), {"token": {"permissions": ["GET *"]}})
	e.code == "TOKEN_PERMISSION_DENIED"
}

test_positions_subaccount if {
	inp := object.union(sub([]), {"request": {"method": "GET", "route": "/objects/{id}/positions"}})
	authz.decision.allow with input as inp
}

# Every webhook route needs event_notifications of a subaccount, reads and
# writes alike; with it, a writable subaccount may use each of them.
test_webhook_routes_need_event_notifications if {
	routes := [
		["GET", "/webhooks"], ["POST", "/webhooks"], ["GET", "/webhooks/{id}"],
		["PATCH", "/webhooks/{id}"], ["DELETE", "/webhooks/{id}"],
		["POST", "/webhooks/{id}/rotate-secret"], ["POST", "/webhooks/{id}/test"],
		["GET", "/webhooks/{id}/deliveries"], ["POST", "/webhooks/{id}/deliveries/{delivery_id}/retry"],
	]
	every r in routes {
		without := authz.decision with input as object.union(sub(["reports"]), {"request": {"method": r[0], "route": r[1]}})
		without.code == "PRIVILEGE_REQUIRED"
		without.details == {"privilege": "event_notifications"}
		with_it := authz.decision with input as object.union(sub(["event_notifications"]), {"request": {"method": r[0], "route": r[1]}})
		with_it == {"allow": true}
	}
}

# Zones (docs/design.md §15): a subaccount reads them with
# event_notifications and never writes them, whatever its privileges; a
# user uses every zone route, a read-only user only the reads.
test_zones_subaccount_reads_only if {
	every r in [["GET", "/zones"], ["GET", "/zones/{id}"]] {
		without := authz.decision with input as object.union(sub(["reports"]), {"request": {"method": r[0], "route": r[1]}})
		without.code == "PRIVILEGE_REQUIRED"
		without.details == {"privilege": "event_notifications"}
		authz.decision == {"allow": true} with input as object.union(sub(["event_notifications"]), {"request": {"method": r[0], "route": r[1]}})
	}
	every r in [["POST", "/zones"], ["PATCH", "/zones/{id}"], ["DELETE", "/zones/{id}"]] {
		d := authz.decision with input as object.union(sub(all_privileges), {"request": {"method": r[0], "route": r[1]}})
		d.code == "PRIVILEGE_REQUIRED"
		d.details == {"account_type": "subaccount"}
		authz.decision == {"allow": true} with input as with_request(r[0], r[1])
		ro := authz.decision with input as object.union(with_request(r[0], r[1]), {"account": {"read_only": true}})
		ro.code == "READ_ONLY_ACCOUNT"
	}
}

# Every zone route names event_notifications, the writes too: one privilege
# per resource, which its scope rule asks for (storage's
# TestScopeRulesAskForTheirRoutePrivilege). A subaccount never reaches the
# writes' privilege (not_for_subaccounts refuses it first), so the table
# itself is what this test holds.
test_zone_routes_name_event_notifications if {
	every r in ["GET /zones", "POST /zones", "GET /zones/{id}", "PATCH /zones/{id}", "DELETE /zones/{id}"] {
		authz.route_privilege[r] == "event_notifications"
	}
}

# Subaccounts write no event rules, service records or reports
# (docs/design.md §15), whatever their privileges and token; a user may
# write them, a read-only user may not, and a token without the route's
# permission may not.
config_writes := [
	["POST", "/events"],
	["PATCH", "/events/{id}"],
	["DELETE", "/events/{id}"],
	["POST", "/services"],
	["PATCH", "/services/{id}"],
	["DELETE", "/services/{id}"],
	["POST", "/services/{id}/done"],
	["POST", "/reports"],
	["PATCH", "/reports/{id}"],
	["DELETE", "/reports/{id}"],
]

test_config_writes_never_for_subaccounts if {
	every w in config_writes {
		inp := object.union(sub(all_privileges), {"request": {"method": w[0], "route": w[1]}})
		d := authz.decision with input as inp
		d.code == "PRIVILEGE_REQUIRED"
		d.details == {"account_type": "subaccount"}
	}
}

test_config_writes_user if {
	every w in config_writes {
		authz.decision == {"allow": true} with input as with_request(w[0], w[1])
		d := authz.decision with input as object.union(with_request(w[0], w[1]), {"account": {"read_only": true}})
		d.code == "READ_ONLY_ACCOUNT"
		e := authz.decision with input as object.union(with_request(w[0], w[1]), {"token": {"permissions": ["GET *"]}})
		e.code == "TOKEN_PERMISSION_DENIED"
	}
}
