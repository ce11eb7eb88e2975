package fleet.scope_test

import data.fleet.scope

account(type, privileges) := {
	"id": 7, "type": type, "manager_id": 3, "active": true,
	"expired": false, "read_only": false, "privileges": privileges,
}

# row builds a known row of a resource (virtual columns included).
row(account_id, manager_id, granted_to) := {"account_id": account_id, "manager_id": manager_id, "granted_to": granted_to}

resources := ["services", "reports", "events", "passengers", "objects", "notifications", "zones"]

admits(resource, acct, r) if {
	scope[resource] with input as {"account": acct, resource: r}
}

test_admin_unrestricted if {
	scope.unrestricted with input as {"account": account("admin", [])}
	every res in resources {
		admits(res, account("admin", []), row(99, 98, 0))
	}
}

test_only_admin_unrestricted if {
	every t in ["manager", "user", "subaccount"] {
		not scope.unrestricted with input as {"account": account(t, [])}
	}
}

test_manager if {
	every res in resources {
		admits(res, account("manager", []), row(7, 1, 0))
		admits(res, account("manager", []), row(12, 7, 0))
		not admits(res, account("manager", []), row(12, 8, 0))
	}
}

test_user if {
	every res in resources {
		admits(res, account("user", []), row(7, 3, 0))
		not admits(res, account("user", []), row(12, 7, 0))
	}
}

test_subaccount_granted_rows if {
	acct := account("subaccount", ["reports", "event_notifications"])
	every res in ["services", "reports", "events", "objects", "notifications"] {
		admits(res, acct, row(3, 1, 7))
		not admits(res, acct, row(3, 1, 8))
		not admits(res, acct, row(4, 1, 7))
		not admits(res, acct, row(7, 3, 7))
	}
}

test_subaccount_needs_privilege if {
	acct := account("subaccount", [])
	not admits("reports", acct, row(3, 1, 7))
	not admits("events", acct, row(3, 1, 7))
	not admits("notifications", acct, row(3, 1, 7))
	admits("services", acct, row(3, 1, 7))
}

# A subaccount holding exactly one privilege sees the granted rows of that
# privilege's resource and none of the other's.
test_subaccount_exactly_one_privilege if {
	only_reports := account("subaccount", ["reports"])
	admits("reports", only_reports, row(3, 1, 7))
	not admits("events", only_reports, row(3, 1, 7))
	not admits("notifications", only_reports, row(3, 1, 7))
	admits("services", only_reports, row(3, 1, 7))

	only_events := account("subaccount", ["event_notifications"])
	admits("events", only_events, row(3, 1, 7))
	admits("notifications", only_events, row(3, 1, 7))
	not admits("notifications", only_events, row(3, 1, 8))
	not admits("reports", only_events, row(3, 1, 7))
	admits("services", only_events, row(3, 1, 7))
}

test_subaccount_objects_granted_without_privilege if {
	acct := account("subaccount", [])
	admits("objects", acct, row(3, 1, 7))
	not admits("objects", acct, row(3, 1, 8))
	not admits("objects", acct, row(3, 1, null))
}

test_subaccount_passengers_of_parent if {
	acct := account("subaccount", [])
	admits("passengers", acct, row(3, 1, 0))
	not admits("passengers", acct, row(7, 3, 0))
}

test_unusable_sees_nothing if {
	cases := [
		object.union(account("admin", []), {"active": false}),
		object.union(account("manager", []), {"expired": true}),
		object.union(account("user", []), {"active": false}),
		object.union(account("subaccount", ["reports"]), {"expired": true}),
		account("reseller", []),
		{"id": 7, "type": "admin"},
	]
	every acct in cases {
		not scope.unrestricted with input as {"account": acct}
		every res in resources {
			not admits(res, acct, row(7, 7, 7))
			not admits(res, acct, row(3, 7, 7))
		}
	}
}

# expired must be exactly false (and active exactly true): an account
# without expired, or with null, a string or a number there, sees nothing,
# as an expired one does.
test_state_must_be_boolean_sees_nothing if {
	cases := [
		object.remove(account("manager", []), ["expired"]),
		object.remove(account("admin", []), ["expired"]),
		object.remove(account("subaccount", ["reports", "event_notifications"]), ["expired"]),
		object.union(account("user", []), {"expired": null}),
		object.union(account("admin", []), {"expired": "false"}),
		object.union(account("manager", []), {"expired": 0}),
		object.remove(account("user", []), ["active"]),
		object.union(account("admin", []), {"active": null}),
		object.union(account("manager", []), {"active": "true"}),
		object.union(account("subaccount", ["reports"]), {"active": 1}),
	]
	every acct in cases {
		not scope.unrestricted with input as {"account": acct}
		every res in resources {
			not admits(res, acct, row(7, 7, 7))
			not admits(res, acct, row(3, 7, 7))
		}
	}
}

# A notification is seen by its account and the accounts above it, never
# by another tree or the account below (a subaccount only through a grant of
# its device, with event_notifications).
test_notifications_of_the_tree if {
	admits("notifications", account("user", []), row(7, 3, 0))
	admits("notifications", account("manager", []), row(12, 7, 0))
	not admits("notifications", account("user", []), row(8, 1, 0))
	not admits("notifications", account("manager", []), row(3, 1, 0))
	not admits("notifications", account("subaccount", ["event_notifications"]), row(7, 3, 0))
}

# A webhook is seen by its own account, an admin, the manager of its
# account (a manager: its users'; a user: its subaccounts'), and a
# subaccount's only by the subaccount itself, with event_notifications;
# never by the account below, a sibling or another tree.
test_webhooks if {
	admits("webhooks", account("admin", []), row(99, 98, 0))
	admits("webhooks", account("manager", []), row(7, 1, 0))
	admits("webhooks", account("manager", []), row(12, 7, 0))
	not admits("webhooks", account("manager", []), row(12, 8, 0))
	admits("webhooks", account("user", []), row(7, 3, 0))
	admits("webhooks", account("user", []), row(12, 7, 0))
	not admits("webhooks", account("user", []), row(3, 1, 0))
	not admits("webhooks", account("user", []), row(8, 3, 0))
	admits("webhooks", account("subaccount", ["event_notifications"]), row(7, 3, 0))
	not admits("webhooks", account("subaccount", ["reports"]), row(7, 3, 0))
	not admits("webhooks", account("subaccount", ["event_notifications"]), row(3, 1, 7))
	not admits("webhooks", account("subaccount", ["event_notifications"]), row(8, 3, 7))
	not admits("webhooks", account("subaccount", ["event_notifications"]), row(12, 7, 0))
}

# An account that cannot use the API sees no webhook, not even its own or
# one whose manager it is.
test_webhooks_unusable_sees_nothing if {
	cases := [
		object.union(account("admin", []), {"active": false}),
		object.union(account("manager", []), {"expired": true}),
		object.union(account("user", []), {"active": false}),
		object.union(account("user", []), {"expired": true}),
		object.union(account("subaccount", ["event_notifications"]), {"expired": true}),
		account("reseller", []),
	]
	every acct in cases {
		not admits("webhooks", acct, row(7, 3, 7))
		not admits("webhooks", acct, row(12, 7, 7))
	}
}

# A subaccount sees its parent's zones with event_notifications (zones
# name no device), never without it, never its own tree's or another's.
test_subaccount_zones_of_parent if {
	acct := account("subaccount", ["event_notifications"])
	admits("zones", acct, row(3, 1, 0))
	not admits("zones", acct, row(7, 3, 0))
	not admits("zones", acct, row(4, 1, 0))
	not admits("zones", account("subaccount", ["reports"]), row(3, 1, 0))
	not admits("zones", account("subaccount", []), row(3, 1, 7))
}
