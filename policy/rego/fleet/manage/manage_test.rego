package fleet.manage_test

import data.fleet.manage

# The tree of the tests: two tenants under no manager, an admin, a user at
# the top, a user directly under the admin, and odd shapes the API does not
# create but the scope must still answer for (a manager under a manager, a
# subaccount under a manager, a user under a user and its subaccount, a
# subaccount under a subaccount and its own). up lists the accounts above,
# nearest first.
tree := {
	1: {"type": "admin", "manager_id": 0, "up": []},
	2: {"type": "manager", "manager_id": 0, "up": []},
	3: {"type": "user", "manager_id": 2, "up": [2]},
	4: {"type": "user", "manager_id": 2, "up": [2]},
	5: {"type": "subaccount", "manager_id": 3, "up": [3, 2]},
	6: {"type": "subaccount", "manager_id": 4, "up": [4, 2]},
	9: {"type": "manager", "manager_id": 0, "up": []},
	10: {"type": "user", "manager_id": 9, "up": [9]},
	11: {"type": "subaccount", "manager_id": 10, "up": [10, 9]},
	12: {"type": "user", "manager_id": 0, "up": []},
	13: {"type": "subaccount", "manager_id": 12, "up": [12]},
	14: {"type": "manager", "manager_id": 2, "up": [2]},
	15: {"type": "user", "manager_id": 14, "up": [14, 2]},
	16: {"type": "subaccount", "manager_id": 2, "up": [2]},
	17: {"type": "user", "manager_id": 1, "up": [1]},
	18: {"type": "user", "manager_id": 3, "up": [3, 2]},
	19: {"type": "subaccount", "manager_id": 18, "up": [18, 3, 2]},
	20: {"type": "subaccount", "manager_id": 5, "up": [5, 3, 2]},
	21: {"type": "subaccount", "manager_id": 20, "up": [20, 5, 3, 2]},
	22: {"type": "subaccount", "manager_id": 14, "up": [14, 2]},
	23: {"type": "admin", "manager_id": 2, "up": [2]},
}

chain(id) := [{"id": c, "type": tree[c].type, "active": true, "expired": false, "read_only": false} | some c in tree[id].up]

# caller is account id as the calling account, with every privilege of a
# subaccount unless privileges are given.
caller(id) := caller_with(id, ["reports", "event_notifications"])

caller_with(id, privileges) := {
	"id": id, "type": tree[id].type, "manager_id": tree[id].manager_id,
	"active": true, "expired": false, "read_only": false,
	"privileges": privileges, "chain": chain(id), "chain_complete": true,
}

target(id) := {"id": id, "type": tree[id].type, "manager_id": tree[id].manager_id, "chain": chain(id), "chain_complete": true}

# row is account id as a row of the management scope.
row(id) := {
	"id": id, "type": tree[id].type, "manager_id": tree[id].manager_id,
	"grand_manager_id": grand(id),
}

grand(id) := g if {
	g := tree[id].up[1]
} else := null

token := {"id": 1, "permissions": ["*"], "expires_at": "2026-06-01T00:00:00Z", "rate_limit": 100, "generation": 0}

# decide is the decision for caller c acting on target t (an id, or null).
decide(c, act, t, change) := d if {
	d := manage.decision with input as {
		"account": c, "token": token, "limits": {"rate_limit": null}, "action": act,
		"target": target_or_null(t), "change": change,
	}
}

target_or_null(t) := target(t) if t != null

target_or_null(null) := null

reason(d) := d.details.reason

denied(d, r) if {
	d.allow == false
	d.code == "MANAGEMENT_DENIED"
	reason(d) == r
}

managed(c, id) if manage.accounts with input as {"account": c, "accounts": row(id)}

ids := {id | some id, _ in tree}

managed_ids(c) := {id | some id in ids; managed(c, id)}

# --- the management scope ---

test_scope_admin_manages_everything if {
	manage.unrestricted with input as {"account": caller(1)}
	managed_ids(caller(1)) == ids
}

test_scope_only_admin_unrestricted if {
	every id in [2, 3, 5] {
		not manage.unrestricted with input as {"account": caller(id)}
	}
}

test_scope_manager if {
	# itself, the accounts it manages (users, a manager, a subaccount) and
	# their subaccounts; not the users of the manager it manages
	managed_ids(caller(2)) == {2, 3, 4, 5, 6, 14, 16, 22, 23}
	managed_ids(caller(9)) == {9, 10, 11}
}

test_scope_user if {
	# itself and its subaccounts; not a user placed under it (18), that
	# user's subaccount (19), nor a subaccount of its subaccount (20)
	managed_ids(caller(3)) == {3, 5}
	managed_ids(caller(12)) == {12, 13}
	managed_ids(caller(17)) == {17}
}

test_scope_subaccount if {
	# itself only, even with accounts placed under it (20) and under those (21)
	managed_ids(caller(5)) == {5}
	managed_ids(caller(20)) == {20}
}

test_scope_unusable_caller_manages_nothing if {
	every id in [1, 2, 3, 5] {
		count(managed_ids(object.union(caller(id), {"active": false}))) == 0
		count(managed_ids(object.union(caller(id), {"expired": true}))) == 0
	}
	count(managed_ids(object.union(caller(2), {"type": "reseller"}))) == 0
	not manage.unrestricted with input as {"account": object.union(caller(1), {"active": false})}
}

# --- decision: the always-defined shape and unknown_action ---

test_unknown_action if {
	denied(decide(caller(1), "account.delete", 3, {}), "unknown_action")
	d := manage.decision with input as {"account": caller(1), "token": token, "target": target(3), "change": {}}
	denied(d, "unknown_action")
	d.details.action == null
}

# --- outside_scope ---

test_outside_scope_every_action if {
	every act in manage.actions {
		# the parent, a sibling and another tenant
		denied(decide(caller(5), act, 3, {}), "outside_scope")
		denied(decide(caller(3), act, 4, {}), "outside_scope")
		denied(decide(caller(2), act, 10, {}), "outside_scope")
	}
}

test_outside_scope_unusable_caller if {
	denied(decide(object.union(caller(1), {"active": false}), "token.revoke", 1, {}), "outside_scope")
	denied(decide(object.union(caller(3), {"expired": true}), "token.revoke", 3, {}), "outside_scope")
}

test_outside_scope_malformed_target if {
	denied(decide(caller(1), "token.revoke", null, {}), "outside_scope")
	d := manage.decision with input as {"account": caller(1), "token": token, "action": "token.revoke", "target": {"id": 3}, "change": {}}
	denied(d, "outside_scope")
}

# malformed_targets are a target the caller manages, by the caller's own id
# (user 3 on itself) or by its manager_id (manager 2 on its user 3), with
# one fact missing or of the wrong type.
malformed_targets := [
	[3, {"id": 3, "manager_id": null, "type": "user"}],
	[3, {"id": 3, "manager_id": "2", "type": "user"}],
	[3, {"id": 3, "manager_id": 2, "type": null}],
	[3, {"id": 3, "manager_id": 2}],
	[2, {"id": "3", "manager_id": 2, "type": "user"}],
	[2, {"id": null, "manager_id": 2, "type": "user"}],
	[2, {"manager_id": 2, "type": "user"}],
]

test_outside_scope_incomplete_target_chain if {
	# a target whose chain could not be loaded whole is not managed, even
	# by an admin or by the account itself (fail closed)
	every c in [1, 2, 3] {
		every complete in [false, null, "true"] {
			d := manage.decision with input as {
				"account": caller(c), "token": token, "action": "token.revoke",
				"target": object.union(target(3), {"chain_complete": complete}), "change": {},
			}
			denied(d, "outside_scope")
		}
	}
	d := manage.decision with input as {
		"account": caller(1), "token": token, "action": "token.revoke",
		"target": object.remove(target(3), ["chain_complete"]), "change": {},
	}
	denied(d, "outside_scope")
}

test_outside_scope_malformed_target_fails_closed if {
	# a well-formed target in the same place is managed
	decide(caller(3), "token.revoke", 3, {}).allow
	decide(caller(2), "token.revoke", 3, {}).allow

	# id, manager_id and type are each checked, whatever else matches
	every m in malformed_targets {
		d := manage.decision with input as {
			"account": caller(m[0]), "token": token, "action": "token.revoke",
			"target": object.union(m[1], {"chain": chain(3), "chain_complete": true}), "change": {},
		}
		denied(d, "outside_scope")
	}
}

# --- not_below_caller ---

create(c, type, under) := decide(c, "account.create", under, {"type": type, "manager_id": manager_of(under), "username": "n"})

manager_of(null) := 0

manager_of(id) := id if id != null

test_admin_creates_managers_and_users if {
	create(caller(1), "manager", null).allow
	create(caller(1), "user", null).allow
	create(caller(1), "user", 2).allow
	create(caller(1), "manager", 1).allow
	create(caller(1), "user", 1).allow
	create(caller(1), "user", 14).allow

	# fixed levels (docs/design.md §2): never a manager under a manager
	denied(create(caller(1), "manager", 2), "not_below_caller")
	denied(create(caller(1), "manager", 14), "not_below_caller")
	denied(create(caller(1), "manager", 9), "not_below_caller")
	denied(create(caller(1), "subaccount", 3), "not_below_caller")
	denied(create(caller(1), "subaccount", null), "not_below_caller")
	denied(create(caller(1), "user", 3), "not_below_caller")
	denied(create(caller(1), "manager", 3), "not_below_caller")
	denied(create(caller(1), "manager", 5), "not_below_caller")
	denied(create(caller(1), "subaccount", 1), "not_below_caller")

	# under a manager, only managers and users
	denied(create(caller(1), "subaccount", 2), "not_below_caller")
	denied(create(caller(1), "admin", 2), "not_below_caller")

	# no subaccount even under a user directly under the admin
	denied(create(caller(1), "subaccount", 17), "not_below_caller")
	denied(create(caller(1), "user", 17), "not_below_caller")
}

test_manager_creates_users_and_their_subaccounts if {
	create(caller(2), "user", 2).allow
	create(caller(2), "subaccount", 3).allow
	denied(create(caller(2), "manager", 2), "not_below_caller")
	denied(create(caller(2), "manager", null), "not_below_caller")
	denied(create(caller(2), "user", null), "not_below_caller")
	denied(create(caller(2), "subaccount", 2), "not_below_caller")
	denied(create(caller(2), "user", 3), "not_below_caller")
	denied(create(caller(2), "subaccount", 5), "not_below_caller")
	denied(create(caller(2), "subaccount", 16), "not_below_caller")

	# under another manager (14) or an admin (23) it manages, nothing: only
	# an admin creates there
	every type in ["manager", "user", "subaccount"] {
		denied(create(caller(2), type, 14), "not_below_caller")
		denied(create(caller(2), type, 23), "not_below_caller")
	}
}

test_user_creates_subaccounts_under_itself if {
	create(caller(3), "subaccount", 3).allow
	denied(create(caller(3), "user", 3), "not_below_caller")
	denied(create(caller(3), "subaccount", 5), "not_below_caller")
	denied(create(caller(3), "subaccount", null), "not_below_caller")
}

test_subaccount_creates_nothing if {
	every type in ["admin", "manager", "user", "subaccount"] {
		denied(create(caller(5), type, 5), "not_below_caller")
	}
}

test_nobody_creates_an_admin if {
	every c in [1, 2, 3, 5] {
		denied(create(caller(c), "admin", c), "not_below_caller")
		denied(create(caller(c), "admin", null), "not_below_caller")
	}
}

# allowed_creates are the creations docs/design.md §9 allows, as [caller, type,
# the account it is created under (null: at the top)].
allowed_creates := [
	[1, "manager", null],
	[1, "user", null],
	[1, "manager", 1],
	[1, "user", 1],
	[1, "user", 2],
	[2, "user", 2],
	[2, "subaccount", 3],
	[3, "subaccount", 3],
	[12, "subaccount", 12],
]

test_allowed_creates if {
	every c in allowed_creates {
		create(caller(c[0]), c[1], c[2]).allow
	}
}

test_create_manager_id_must_name_the_target if {
	# manager_id must be the target's id (0 at the top) for every creation
	# that is otherwise allowed: another account, 0 under an account, a
	# number as a string, null or nothing are refused
	every c in allowed_creates {
		others := [m | some m in [0, 1, 2, 3, 9, 12, null, "0", "2", "3"]; m != manager_of(c[2])]
		count(others) == 9
		every m in others {
			denied(decide(caller(c[0]), "account.create", c[2], {"type": c[1], "manager_id": m, "username": "n"}), "not_below_caller")
		}
		denied(decide(caller(c[0]), "account.create", c[2], {"type": c[1], "username": "n"}), "not_below_caller")
	}
}

test_create_denial_details if {
	# details.type is the type asked for, not the caller's
	d := create(caller(3), "manager", 3)
	d.details == {"reason": "not_below_caller", "type": "manager"}
	create(caller(2), "subaccount", 2).details.type == "subaccount"
	e := decide(caller(3), "account.create", 3, {"manager_id": 3})
	e.details == {"reason": "not_below_caller", "type": null}
}

test_manager_creates_subaccounts_only_under_its_own_users if {
	# the target's own facts are checked, not only its place in the
	# management scope: the manager itself presented as a user of another
	# manager (in scope by its id) is not one of its users
	forged := {"id": 2, "type": "user", "manager_id": 9, "chain": chain(10), "chain_complete": true}
	d := manage.decision with input as {
		"account": caller(2), "token": token, "action": "account.create",
		"target": forged, "change": {"type": "subaccount", "manager_id": 2, "username": "n"},
	}
	denied(d, "not_below_caller")
}

test_create_by_unusable_caller if {
	denied(create(object.union(caller(1), {"active": false}), "user", null), "not_below_caller")
}

# --- wrong_target_type ---

test_grants_only_for_subaccounts if {
	every t in [2, 3, 14] {
		denied(decide(caller(2), "grants.replace", t, {"imei": []}), "wrong_target_type")
	}
	decide(caller(2), "grants.replace", 5, {"imei": []}).allow
}

test_objects_not_for_subaccounts if {
	d := decide(caller(3), "object.create", 5, {"imei": "A1"})
	denied(d, "wrong_target_type")
	d.details.target_type == "subaccount"
	denied(decide(caller(1), "object.create", 16, {"imei": "A1"}), "wrong_target_type")

	# devices are registered for admins, managers and users
	decide(caller(3), "object.create", 3, {"imei": "A1"}).allow
	decide(caller(2), "object.create", 4, {"imei": "A1"}).allow
	decide(caller(1), "object.create", 1, {"imei": "A1"}).allow
	decide(caller(2), "object.create", 2, {"imei": "A1"}).allow
	decide(caller(2), "object.create", 14, {"imei": "A1"}).allow
	decide(caller(1), "object.create", 9, {"imei": "A1"}).allow
}

# object.move: a device goes to an account in scope that may own devices
# (the current owner is checked by the Go side against the same scope).
test_object_move if {
	decide(caller(1), "object.move", 9, {"imei": "A1", "from_account_id": 3, "account_id": 9}).allow
	decide(caller(2), "object.move", 4, {"imei": "A1", "from_account_id": 3, "account_id": 4}).allow
	d := decide(caller(2), "object.move", 5, {"imei": "A1", "from_account_id": 3, "account_id": 5})
	denied(d, "wrong_target_type")
	d.details.target_type == "subaccount"
	denied(decide(caller(1), "object.move", 16, {"imei": "A1"}), "wrong_target_type")
	denied(decide(caller(3), "object.move", 4, {"imei": "A1", "from_account_id": 3, "account_id": 4}), "outside_scope")
	denied(decide(caller(2), "object.move", 9, {"imei": "A1", "from_account_id": 3, "account_id": 9}), "outside_scope")
}

# usage.read (docs/design.md §12): whose usage a caller reads is its management
# scope; an account outside it is outside_scope (the API answers 404 before).
test_usage_read if {
	every id in ids {
		decide(caller(1), "usage.read", id, {}).allow
	}
	every id in {2, 3, 4, 5, 6} {
		decide(caller(2), "usage.read", id, {"account_id": id}).allow
	}
	decide(caller(3), "usage.read", 3, {}).allow
	decide(caller(3), "usage.read", 5, {}).allow
	decide(caller(5), "usage.read", 5, {}).allow
	denied(decide(caller(2), "usage.read", 9, {}), "outside_scope")
	denied(decide(caller(2), "usage.read", 10, {}), "outside_scope")
	denied(decide(caller(3), "usage.read", 2, {}), "outside_scope")
	denied(decide(caller(3), "usage.read", 4, {}), "outside_scope")
	denied(decide(caller(5), "usage.read", 3, {}), "outside_scope")
	denied(decide(caller(12), "usage.read", 3, {}), "outside_scope")
}

# --- immutable_field ---

test_immutable_fields if {
	every field in ["type", "manager_id", "username", "id", "created_at"] {
		d := decide(caller(2), "account.update", 3, {field: 1})
		denied(d, "immutable_field")
		d.details.field == field
	}
	denied(decide(caller(3), "account.update", 3, {"type": "manager", "active": false}), "immutable_field")
}

# --- own_account ---

test_own_limits if {
	every c in [1, 2, 3, 5] {
		every field in manage.own_limits {
			d := decide(caller(c), "account.update", c, {field: false})
			denied(d, "own_account")
			d.details.fields == [field]
		}
		decide(caller(c), "account.update", c, {"email": "me@example.com"}).allow
		decide(caller(c), "account.update", c, {"timezone": "Europe/Paris"}).allow
	}
}

# limits are a valid value of every own limit.
limits := {
	"active": false, "read_only": true, "account_expire": true,
	"account_expire_dt": "2026-12-31", "privileges": ["reports"], "rate_limit": 50,
	"quotas": {},
}

test_own_limits_of_others_change if {
	every field, value in limits {
		decide(caller(2), "account.update", 3, {field: value}).allow
		decide(caller(3), "account.update", 5, {field: value}).allow
		decide(caller(1), "account.update", 2, {field: value}).allow
	}
	count(limits) == count(manage.own_limits)
}

test_own_grants if {
	denied(decide(caller(5), "grants.replace", 5, {"imei": []}), "own_account")
}

# --- exceeds_own_quota ---

# decide_quotas is decide for an account.update of target t asking for
# quotas, the caller's own limits in force being own (absent when null).
decide_quotas(c, t, quotas, own) := d if {
	own != null
	d := manage.decision with input as {
		"account": c, "token": token, "action": "account.update",
		"target": target(t), "change": {"quotas": quotas}, "limits": {"rate_limit": null, "quotas": own},
	}
} else := decide(c, "account.update", t, {"quotas": quotas})

own_quotas := {"subaccounts": 10, "tokens": 20, "devices": 30, "passengers": null, "webhooks": 8, "zones": 4}

test_quota_within_own if {
	# up to the caller's own limit, one quota or all at once
	decide_quotas(caller(2), 3, {"devices": 30}, own_quotas).allow
	decide_quotas(caller(2), 3, {"devices": 0, "tokens": 20, "subaccounts": 1}, own_quotas).allow
	decide_quotas(caller(3), 5, {"tokens": 5}, own_quotas).allow

	# every quota of docs/design.md §12 is known, webhooks (§14) included
	decide_quotas(caller(2), 3, {"webhooks": 8}, own_quotas).allow
	denied(decide_quotas(caller(2), 3, {"webhooks": 9}, own_quotas), "exceeds_own_quota")

	# and zones (§15)
	decide_quotas(caller(2), 3, {"zones": 4}, own_quotas).allow
	denied(decide_quotas(caller(2), 3, {"zones": 5}, own_quotas), "exceeds_own_quota")

	# an unlimited own quota bounds nothing, unlimited included
	decide_quotas(caller(2), 3, {"passengers": 1000000}, own_quotas).allow
	decide_quotas(caller(2), 3, {"passengers": null}, own_quotas).allow
	decide_quotas(caller(2), 3, {}, own_quotas).allow
}

test_quota_above_own if {
	d := decide_quotas(caller(2), 3, {"devices": 31}, own_quotas)
	denied(d, "exceeds_own_quota")
	d.details.quota == "devices"
	d.details.limit == 30

	# unlimited is above every number
	e := decide_quotas(caller(3), 5, {"tokens": null}, own_quotas)
	denied(e, "exceeds_own_quota")
	e.details.quota == "tokens"

	# several: the first by name
	f := decide_quotas(caller(2), 3, {"tokens": 21, "devices": 31}, own_quotas)
	f.details.quota == "devices"
}

test_quota_admin_sets_any if {
	decide_quotas(caller(1), 2, {"devices": 1000000, "tokens": null}, own_quotas).allow
	decide_quotas(caller(1), 2, {"devices": 5}, null).allow
}

test_quota_fails_closed if {
	# the caller's own limits missing, or not naming the quota
	denied(decide_quotas(caller(2), 3, {"devices": 1}, null), "exceeds_own_quota")
	denied(decide_quotas(caller(2), 3, {"devices": 1}, {"tokens": 5}), "exceeds_own_quota")

	# an unknown quota, a value that is not a number, quotas that are not an object
	g := decide_quotas(caller(2), 3, {"drivers": 1}, own_quotas)
	denied(g, "exceeds_own_quota")
	g.details.quota == "drivers"
	denied(decide_quotas(caller(2), 3, {"devices": "5"}, own_quotas), "exceeds_own_quota")
	h := decide_quotas(caller(2), 3, [1], own_quotas)
	denied(h, "exceeds_own_quota")
	h.details.quota == "quotas"
	denied(decide_quotas(caller(1), 2, "x", own_quotas), "exceeds_own_quota")

	# own limits that name an unknown quota, or are not numbers, bound nothing
	denied(decide_quotas(caller(2), 3, {"drivers": 1}, object.union(own_quotas, {"drivers": null})), "exceeds_own_quota")
	denied(decide_quotas(caller(2), 3, {"drivers": 1}, object.union(own_quotas, {"drivers": 5})), "exceeds_own_quota")
	denied(decide_quotas(caller(2), 3, {"devices": 1}, object.union(own_quotas, {"devices": "x"})), "exceeds_own_quota")
}

test_quota_never_own if {
	# never oneself, an admin included, whatever the value
	every c in [1, 2, 3, 5] {
		d := decide_quotas(caller(c), c, {"devices": 0}, own_quotas)
		denied(d, "own_account")
		d.details.fields == ["quotas"]
	}
}

# create_quotas is the decision for caller c creating an account of type
# under account under with quotas (the new account's limits), the
# caller's own limits in force being own.
create_quotas(c, type, under, quotas, own) := d if {
	d := manage.decision with input as {
		"account": caller(c), "token": token, "action": "account.create", "target": target(under),
		"change": object.union(create_change(type, under, null), {"quotas": quotas}),
		"limits": {"rate_limit": null, "quotas": own},
	}
}

test_quota_on_create if {
	# a new account's limits are judged by the same rule as a change's
	# (issue 34 item 3): up to the creator's own, unlimited where it is
	create_quotas(2, "user", 2, {"subaccounts": 10, "tokens": 20, "devices": 30, "passengers": null}, own_quotas).allow
	create_quotas(3, "subaccount", 3, {"devices": 0, "passengers": 1000000}, own_quotas).allow
	d := create_quotas(2, "user", 2, {"subaccounts": 10, "tokens": 20, "devices": 100000, "passengers": null}, own_quotas)
	denied(d, "exceeds_own_quota")
	d.details == {"reason": "exceeds_own_quota", "quota": "devices", "limit": 30}
	e := create_quotas(3, "subaccount", 3, {"tokens": null}, own_quotas)
	denied(e, "exceeds_own_quota")
	e.details.quota == "tokens"

	# an admin gives any; quotas that are not an object are never within
	create_quotas(1, "manager", 1, {"devices": 1000000000, "tokens": null}, own_quotas).allow
	f := create_quotas(2, "user", 2, [5], own_quotas)
	denied(f, "exceeds_own_quota")
	f.details.quota == "quotas"

	# the creation order comes first: a manager under a manager is not
	# below the caller, whatever its quotas
	denied(create_quotas(2, "manager", 2, {"devices": 100000}, own_quotas), "not_below_caller")
}

test_quota_only_account_update if {
	# other actions never read change.quotas
	decide(caller(3), "token.create", 3, {"account_id": 3, "name": "n", "permissions": ["GET *"], "expires_at": "2026-05-01T00:00:00Z", "rate_limit": 10, "quotas": {"x": 1}}).allow
	decide(caller(3), "token.create", 3, {"account_id": 3, "name": "n", "permissions": ["GET *"], "expires_at": "2026-05-01T00:00:00Z", "rate_limit": 10, "quotas": "x"}).allow
}

# --- privilege_not_held ---

test_privileges_subset if {
	every c in [1, 2, 3] {
		decide(caller(c), "account.update", 5, {"privileges": ["reports", "event_notifications"]}).allow
		decide(caller(c), "account.update", 5, {"privileges": []}).allow
	}
	create_sub := {"type": "subaccount", "manager_id": 3, "privileges": ["reports"]}
	decide(caller(3), "account.create", 3, create_sub).allow
	d := decide(caller(3), "account.create", 3, object.union(create_sub, {"privileges": ["reports", "admin"]}))
	denied(d, "privilege_not_held")
	d.details.privilege == "admin"
	denied(decide(caller(3), "account.update", 5, {"privileges": "reports"}), "privilege_not_held")
	e := decide(caller(3), "account.create", 3, object.union(create_sub, {"privileges": "reports"}))
	denied(e, "privilege_not_held")
	e.details.privilege == "(not a list)"
}

test_admin_manager_user_hold_both_privileges if {
	# whatever their own privilege list says (the API stores none for them)
	every c in [1, 2, 3] {
		every own in [[], ["reports"], ["event_notifications"]] {
			manage.held == ["event_notifications", "reports"] with input as {"account": caller_with(c, own)}
			decide(caller_with(c, own), "account.update", 5, {"privileges": ["reports", "event_notifications"]}).allow
		}
	}
	decide(caller_with(2, []), "account.create", 3, {"type": "subaccount", "manager_id": 3, "username": "n", "privileges": ["event_notifications"]}).allow
}

test_subaccount_holds_only_its_own if {
	# the subaccount can only reach itself, where own_account wins
	denied(decide(caller_with(5, ["reports"]), "account.update", 5, {"privileges": ["event_notifications"]}), "own_account")
	manage.held == ["reports"] with input as {"account": caller_with(5, ["reports", "bogus"])}
	manage.held == ["event_notifications", "reports"] with input as {"account": caller(3)}
}

test_privilege_held_by_nobody_else if {
	# a subaccount granter (reachable only by a changed policy) holds its own
	d := manage.decision with input as {
		"account": caller_with(5, ["reports"]), "token": token, "action": "account.update",
		"target": target(5), "change": {"privileges": ["event_notifications"]},
	}
		with manage.own_change as false
	denied(d, "privilege_not_held")
}

# --- device_not_owned ---

grants(c, t, imeis, owned) := d if {
	d := manage.decision with input as {
		"account": caller(c), "token": token, "action": "grants.replace",
		"target": object.union(target(t), {"owned_imei": owned}), "change": {"imei": imeis},
	}
}

test_devices_of_the_parent if {
	grants(3, 5, ["A", "B"], ["A", "B", "C"]).allow
	grants(2, 5, ["A"], ["A"]).allow
	grants(1, 5, [], []).allow
	d := grants(3, 5, ["C", "B", "A"], ["A"])
	denied(d, "device_not_owned")
	d.details.imei == "B"
	denied(grants(3, 5, ["A"], []), "device_not_owned")
	denied(grants(3, 5, "A", ["A"]), "device_not_owned")
	no_owned := manage.decision with input as {"account": caller(3), "token": token, "action": "grants.replace", "target": target(5), "change": {"imei": ["A"]}}
	denied(no_owned, "device_not_owned")
}

# --- exceeds_token ---

mint(perms, expires_at, rate_limit) := d if {
	d := manage.decision with input as {
		"account": caller(3), "token": object.union(token, {"permissions": perms}), "action": "token.create",
		"target": target(3),
		"change": {"permissions": ["GET /events/{id}"], "expires_at": expires_at, "rate_limit": rate_limit},
	}
}

mint_perms(held, asked) := d if {
	d := manage.decision with input as {
		"account": caller(3), "token": object.union(token, {"permissions": held}), "action": "token.create",
		"target": target(5),
		"change": {"permissions": asked, "expires_at": token.expires_at, "rate_limit": token.rate_limit},
	}
}

test_token_permissions_covered if {
	mint_perms(["*"], ["*", "GET *", "POST /passengers", "DELETE /tokens/{id}"]).allow
	mint_perms(["GET *"], ["GET /events/{id}", "GET *", "GET /accounts"]).allow
	mint_perms(["GET /services", "POST /tokens"], ["GET /services"]).allow
	mint_perms(["GET /services"], []).allow
	d := mint_perms(["GET *"], ["POST /passengers", "GET /services"])
	denied(d, "exceeds_token")
	d.details == {"reason": "exceeds_token", "field": "permissions", "permission": "POST /passengers"}
	denied(mint_perms(["GET *"], ["*"]), "exceeds_token")
	denied(mint_perms(["GET /services"], ["GET *"]), "exceeds_token")
	denied(mint_perms(["GET /services"], ["GET /services/due"]), "exceeds_token")
	denied(mint_perms(["POST *"], ["POST"]), "exceeds_token")
	denied(mint_perms(["GET *"], ["GET services"]), "exceeds_token")
	denied(mint_perms(["*"], "GET /services"), "exceeds_token")
}

test_token_expiry if {
	mint(["*"], "2026-06-01T00:00:00Z", 100).allow # equal
	mint(["*"], "2026-05-31T23:59:59.999Z", 100).allow # earlier
	mint(["*"], "2026-06-01T02:00:00+02:00", 100).allow # equal, other zone
	d := mint(["*"], "2026-06-01T00:00:00.000000001Z", 100)
	denied(d, "exceeds_token")
	d.details.field == "expires_at"
	denied(mint(["*"], null, 100), "exceeds_token") # never expires
	denied(mint(["*"], "tomorrow", 100), "exceeds_token")
}

test_token_expiry_creator_never_expires if {
	d := manage.decision with input as {
		"account": caller(3), "token": object.union(token, {"expires_at": null}), "action": "token.create",
		"target": target(3), "change": {"permissions": ["*"], "expires_at": null, "rate_limit": 100},
	}
	d.allow
}

test_token_rate_limit if {
	mint(["*"], "2026-06-01T00:00:00Z", 99).allow
	d := mint(["*"], "2026-06-01T00:00:00Z", 101)
	denied(d, "exceeds_token")
	d.details.field == "rate_limit"
	denied(mint(["*"], "2026-06-01T00:00:00Z", null), "exceeds_token") # unlimited
	denied(mint(["*"], "2026-06-01T00:00:00Z", "100"), "exceeds_token")
}

test_token_rate_limit_creator_malformed if {
	# a creating token's limit that is not a number covers nothing (a string
	# sorts above every number in Rego)
	every limit in ["100", true, {}] {
		d := manage.decision with input as {
			"account": caller(3), "token": object.union(token, {"rate_limit": limit}), "action": "token.create",
			"target": target(3), "change": {"permissions": ["*"], "expires_at": token.expires_at, "rate_limit": 1},
		}
		denied(d, "exceeds_token")
		d.details.field == "rate_limit"
	}
}

test_token_rate_limit_creator_unlimited if {
	d := manage.decision with input as {
		"account": caller(3), "token": object.union(token, {"rate_limit": null}), "action": "token.create",
		"target": target(3), "change": {"permissions": ["*"], "expires_at": token.expires_at, "rate_limit": null},
	}
	d.allow
}

# mint_for is caller c's token.create of a token for account t.
mint_for(c, t) := decide(caller(c), "token.create", t, {"permissions": ["GET /services"], "expires_at": token.expires_at, "rate_limit": 1})

test_token_minted_only_within_caller_scope if {
	# the attack of issue 19: a manager (2) above another manager (14, a
	# shape the fixed levels no longer allow but a database may still hold)
	# manages it, yet cannot mint a token for it: the sub-manager's scope
	# holds its own users (15), which the manager's does not
	d := mint_for(2, 14)
	denied(d, "outside_scope")
	d.details == {"reason": "outside_scope", "target_type": "manager"}

	# its users and every subaccount in its scope are within (a subaccount
	# sees a part of its parent's rows, which the manager sees, even under
	# the sub-manager 14 or directly under the manager)
	mint_for(2, 5).allow
	mint_for(2, 3).allow
	mint_for(2, 22).allow
	mint_for(2, 16).allow

	# an admin placed under the manager is not: its scope is everything
	denied(mint_for(2, 23), "outside_scope")

	# the caller's own account, whatever its type, and anything for an admin
	every c in [1, 2, 3, 5, 14] {
		mint_for(c, c).allow
	}
	every t in [2, 9, 14, 16, 22] {
		mint_for(1, t).allow
	}

	# a user: its subaccounts
	mint_for(3, 5).allow
	mint_for(12, 13).allow

	# other actions on the sub-manager are not this rule's
	decide(caller(2), "token.revoke", 14, {}).allow
}

# mint_gen is a token.create by a token of the given generation.
mint_gen(generation) := d if {
	d := manage.decision with input as {
		"account": caller(3), "token": object.union(token, {"generation": generation}), "action": "token.create",
		"target": target(3), "change": {"permissions": ["*"], "expires_at": token.expires_at, "rate_limit": 100},
	}
}

test_token_generation if {
	# a token minted max_generation times over mints no more (its requests
	# count against every minter's budget: a bounded number of them)
	manage.max_generation == 8
	mint_gen(0).allow
	mint_gen(7).allow
	d := mint_gen(8)
	denied(d, "exceeds_token")
	d.details == {"reason": "exceeds_token", "field": "generation", "max_generation": 8}
	denied(mint_gen(9), "exceeds_token")

	# a missing or malformed generation fails closed
	every g in ["1", null, true] {
		mint_gen(g).details.field == "generation"
	}
	e := manage.decision with input as {
		"account": caller(3), "token": object.remove(token, ["generation"]), "action": "token.create",
		"target": target(3), "change": {"permissions": ["*"], "expires_at": token.expires_at, "rate_limit": 100},
	}
	e.details.field == "generation"

	# only token.create reads it
	decide_with_gen := manage.decision with input as {
		"account": caller(3), "token": object.union(token, {"generation": 8}), "action": "token.revoke",
		"target": target(3), "change": {},
	}
	decide_with_gen.allow
}

test_token_for_managed_accounts if {
	every c in [1, 2, 3] {
		decide(caller(c), "token.create", 5, {"permissions": ["GET /services"], "expires_at": token.expires_at, "rate_limit": 1}).allow
	}
	decide(caller(5), "token.create", 5, {"permissions": ["GET /services"], "expires_at": token.expires_at, "rate_limit": 1}).allow
}

# --- token.revoke and object.create have no rule of their own ---

test_revoke_in_scope if {
	every c in [1, 2, 3, 5] {
		decide(caller(c), "token.revoke", c, {}).allow
	}
	decide(caller(2), "token.revoke", 5, {}).allow
}

# --- each reason belongs to its actions ---

# baseline are, per action, a caller, a target and a change that are
# allowed.
baseline := {
	"account.create": [3, 3, {"type": "subaccount", "manager_id": 3, "username": "n"}],
	"account.update": [3, 5, {"email": "s@example.com"}],
	"grants.replace": [3, 5, {"imei": []}],
	"object.create": [3, 3, {"imei": "A1", "name": "van"}],
	"object.move": [2, 4, {"imei": "A1", "from_account_id": 3, "account_id": 4}],
	"token.create": [3, 5, {"permissions": ["GET /services"], "expires_at": token.expires_at, "rate_limit": 1}],
	"token.revoke": [3, 5, {}],
	"usage.read": [3, 5, {"account_id": 5}],
	"account.erase": [3, 5, {}],
}

# decide_with is the decision on action act's baseline with extra fields in
# its change and no device of the parent on its target.
decide_with(act, extra) := d if {
	b := baseline[act]
	d := manage.decision with input as {
		"account": caller(b[0]), "token": token, "action": act,
		"target": object.union(target(b[1]), {"owned_imei": []}),
		"change": object.union(b[2], extra),
	}
}

account_writes := {"account.create", "account.update"}

test_baselines_allowed if {
	every act in manage.actions {
		decide_with(act, {}).allow
	}
	count(baseline) == count(manage.actions)
}

test_privileges_only_for_account_writes if {
	# privileges in the change of another action are not granted by it
	every act in account_writes {
		denied(decide_with(act, {"privileges": ["bogus"]}), "privilege_not_held")
		denied(decide_with(act, {"privileges": "reports"}), "privilege_not_held")
	}
	every act in manage.actions - account_writes {
		decide_with(act, {"privileges": ["bogus"]}).allow
	}
}

test_devices_only_for_grants if {
	# a device list in the change of another action grants nothing
	denied(decide_with("grants.replace", {"imei": ["X"]}), "device_not_owned")
	every act in manage.actions - {"grants.replace"} {
		object.get(decide_with(act, {"imei": ["X"]}), ["details", "reason"], null) != "device_not_owned"
	}
}

# --- precedence ---

test_precedence if {
	# outside_scope before not_below_caller
	denied(create(caller(3), "subaccount", 4), "outside_scope")

	# a token outside the caller's scopes before exceeds_token
	d0 := manage.decision with input as {
		"account": caller(2), "token": object.union(token, {"permissions": ["GET *"]}), "action": "token.create",
		"target": target(14), "change": {"permissions": ["*"], "expires_at": null, "rate_limit": null},
	}
	denied(d0, "outside_scope")

	# immutable_field before own_account
	denied(decide(caller(3), "account.update", 3, {"type": "user", "active": true}), "immutable_field")

	# own_account before privilege_not_held
	denied(decide(caller(3), "account.update", 3, {"privileges": ["bogus"]}), "own_account")

	# wrong_target_type before device_not_owned
	denied(grants(3, 3, ["X"], []), "wrong_target_type")

	# permissions before expiry before rate limit
	d := mint(["POST *"], null, null)
	d.details.field == "permissions"
	denied(mint(["*"], null, null), "exceeds_token")
	mint(["*"], null, null).details.field == "expires_at"
}

# --- exceeds_account (docs/design.md §12: never above one's own limit) ---

# limited(c, act, t, change, own) is the decision for caller c whose own
# account has the rate limit own (null: none).
limited(c, act, t, change, own) := d if {
	d := manage.decision with input as {
		"account": caller(c), "token": token, "limits": {"rate_limit": own}, "action": act,
		"target": target_or_null(t), "change": change,
	}
}

test_account_rate_limit_within_own if {
	# a manager limited to 100 gives its user 50 or 100, not 101, and
	# not none (unlimited is above any limit)
	limited(2, "account.update", 3, {"rate_limit": 50}, 100).allow
	limited(2, "account.update", 3, {"rate_limit": 100}, 100).allow
	d := limited(2, "account.update", 3, {"rate_limit": 101}, 100)
	denied(d, "exceeds_account")
	d.details == {"reason": "exceeds_account", "field": "rate_limit", "limit": 100}
	denied(limited(2, "account.update", 3, {"rate_limit": null}, 100), "exceeds_account")

	# not a number is never within a limit
	denied(limited(2, "account.update", 3, {"rate_limit": true}, 100), "exceeds_account")
	denied(limited(2, "account.update", 3, {"rate_limit": 50}, "100"), "exceeds_account")

	# the same on create: a user created under the manager
	limited(2, "account.create", 2, create_change("user", 2, 100), 100).allow
	denied(limited(2, "account.create", 2, create_change("user", 2, 200), 100), "exceeds_account")
	denied(limited(2, "account.create", 2, create_change("user", 2, null), 100), "exceeds_account")

	# a limited caller changes other fields freely
	limited(2, "account.update", 3, {"email": "x@example.com"}, 100).allow
}

create_change(type, manager, rate) := {
	"username": "new", "email": "", "type": type, "manager_id": manager, "active": true,
	"read_only": false, "account_expire": false, "account_expire_dt": null, "privileges": [],
	"rate_limit": rate,
}

test_account_rate_limit_unlimited_caller if {
	# a caller without a limit sets any, or none
	limited(1, "account.update", 3, {"rate_limit": 100000}, null).allow
	limited(2, "account.update", 3, {"rate_limit": null}, null).allow
	limited(3, "account.create", 3, create_change("subaccount", 3, 7), null).allow
}

test_account_rate_limit_not_own if {
	# nobody sets its own, not even lower (own_account wins)
	every c in [1, 2, 3, 5] {
		d := limited(c, "account.update", c, {"rate_limit": 1}, 100)
		denied(d, "own_account")
		d.details.fields == ["rate_limit"]
	}

	# exceeds_account only for the account writes
	limited(2, "token.create", 3, {"permissions": ["GET *"], "expires_at": "2026-01-01T00:00:00Z", "rate_limit": 50}, 10).allow
}

# --- account.erase (docs/design.md §12) ---

test_erase_by_whoever_manages_the_account if {
	# an admin any account but an admin; a manager its users, their
	# subaccounts and the odd shapes in its scope; a user its subaccounts
	every t in [2, 3, 5, 9, 10, 11, 12, 13, 17] {
		decide(caller(1), "account.erase", t, {}).allow
	}
	every t in [3, 4, 5, 6, 14, 16, 22] {
		decide(caller(2), "account.erase", t, {}).allow
	}
	decide(caller(3), "account.erase", 5, {}).allow
	decide(caller(12), "account.erase", 13, {}).allow
}

test_erase_never_ones_own_account if {
	every c in [2, 3, 5, 9, 12, 17] {
		d := decide(caller(c), "account.erase", c, {})
		denied(d, "own_account")
		d.details.fields == []
	}
}

test_erase_never_an_admin if {
	# the admin itself and an admin placed in a manager's scope
	denied(decide(caller(1), "account.erase", 1, {}), "wrong_target_type")
	denied(decide(caller(1), "account.erase", 23, {}), "wrong_target_type")
	denied(decide(caller(2), "account.erase", 23, {}), "wrong_target_type")
}

test_erase_outside_scope if {
	# above the caller, another tenant, a sibling, a user's own manager
	denied(decide(caller(3), "account.erase", 2, {}), "outside_scope")
	denied(decide(caller(3), "account.erase", 4, {}), "outside_scope")
	denied(decide(caller(2), "account.erase", 10, {}), "outside_scope")
	denied(decide(caller(5), "account.erase", 3, {}), "outside_scope")
	denied(decide(caller(9), "account.erase", 1, {}), "outside_scope")
	denied(decide(caller(2), "account.erase", null, {}), "outside_scope")
}

test_erase_target_of_unknown_type_is_wrong if {
	d := manage.decision with input as {
		"account": caller(1), "token": token, "limits": {"rate_limit": null}, "action": "account.erase",
		"target": object.union(target(3), {"type": "robot"}), "change": {},
	}
	denied(d, "wrong_target_type")
}

# The events quota (docs/design.md §15) is set like the others: up to the
# caller's own limit, never above it.
test_quota_events if {
	own := object.union(own_quotas, {"events": 40})
	decide_quotas(caller(2), 3, {"events": 40}, own).allow
	d := decide_quotas(caller(2), 3, {"events": 41}, own)
	denied(d, "exceeds_own_quota")
	d.details.quota == "events"
	d.details.limit == 40
}
