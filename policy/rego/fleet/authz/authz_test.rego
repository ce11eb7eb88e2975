package fleet.authz_test

import data.fleet.authz

# base is an active, writable user whose token grants everything.
base := {
	"request": {"method": "GET", "route": "/services"},
	"token": {"id": 1, "permissions": ["*"]},
	"account": {
		"id": 7, "type": "user", "manager_id": 3, "active": true,
		"expired": false, "read_only": false, "privileges": [],
	},
}

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
	d == {"allow": false, "code": "ACCOUNT_INACTIVE", "message": "the account is inactive", "details": {}}
}

test_missing_active_fails_closed if {
	authz.decision.code == "ACCOUNT_INACTIVE" with input as object.remove(base, ["account"])
}

test_unknown_type if {
	d := authz.decision with input as with_account({"type": "reseller"})
	d.code == "ACCOUNT_INACTIVE"
	d.details == {"account_type": "reseller"}
}

test_expired if {
	d := authz.decision with input as with_account({"expired": true})
	d == {"allow": false, "code": "ACCOUNT_EXPIRED", "message": "the account has expired", "details": {}}
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
	d == {"allow": false, "code": "READ_ONLY_ACCOUNT", "message": "the account is read-only", "details": {}}
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
	p == {
		"read_only": false,
		"privileges": ["event_notifications", "reports"],
		"token": ["*"],
		"routes": {
			"GET /me": true, "GET /services": true, "GET /services/due": true,
			"POST /passengers": true, "GET /reports": true, "GET /events": true,
			"GET /events/{id}": true,
		},
	}
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
	p.routes == {
		"GET /me": true, "GET /services": true, "GET /services/due": true,
		"POST /passengers": false, "GET /reports": true, "GET /events": false,
		"GET /events/{id}": false,
	}
}

test_permissions_unknown_type if {
	p := authz.permissions with input as object.remove(with_account({"type": "reseller"}), ["token"])
	p.privileges == []
	p.token == []
	every _, allowed in p.routes {
		allowed == false
	}
}

test_permissions_read_only_missing_fails_closed if {
	authz.permissions.read_only with input as object.remove(base, ["account"])
}
