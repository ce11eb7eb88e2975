# METADATA
# title: fleetapi row scope
# description: |
#   Which rows of each tenant resource the caller may see.
#
#   Input: input.account {id, type, manager_id, active, expired, privileges}
#   is known (schemas/input.json). The row is the UNKNOWN input.<resource>
#   (services, reports, events, passengers, objects, notifications, webhooks, zones): each rule here is partially
#   evaluated with that unknown through OPA's rego/compile (target ucast) and
#   the residue becomes the SQL WHERE clause.
#
#   Contract with storage: columns are input.<resource>.<column> and only
#   account_id, manager_id (virtual: the owning account's manager) and
#   granted_to (virtual: the subaccount to which every device of the row is
#   granted) are used. No rule has a default, and no unknown is indexed by
#   position. An empty residue means "every row" and is accepted only when
#   unrestricted is true. A caller whose account is inactive, expired or of
#   an unknown type has no rule true: it sees nothing.
# schemas:
#   - input: schema.input
#   - input.services: schema.row
#   - input.reports: schema.row
#   - input.events: schema.row
#   - input.passengers: schema.row
#   - input.objects: schema.row
#   - input.notifications: schema.row
#   - input.webhooks: schema.row
#   - input.zones: schema.row
package fleet.scope

# usable: the account may use the API at all.
usable if {
	input.account.active == true
	input.account.expired == false
}

# unrestricted marks callers that see every row (admins).
unrestricted if {
	usable
	input.account.type == "admin"
}

services if unrestricted

services if visible(input.services)

services if granted(input.services)

reports if unrestricted

reports if visible(input.reports)

reports if {
	holds("reports")
	granted(input.reports)
}

events if unrestricted

events if visible(input.events)

events if {
	holds("event_notifications")
	granted(input.events)
}

passengers if unrestricted

passengers if visible(input.passengers)

# A subaccount sees the passengers of its parent: passengers name no devices.
passengers if {
	subaccount
	input.passengers.account_id == input.account.manager_id
}

# notifications: who sees a notification is who may see its rule (its
# account and the accounts above it, like events; a subaccount with
# event_notifications when its one device is granted). A service
# notification is seen like its service row (services: account, tree,
# device granted), under the same privilege, which GET /notifications*
# needs of a subaccount anyway (authz route_privilege): the scope's columns
# cannot tell the two apart, and need not.
notifications if unrestricted

notifications if visible(input.notifications)

notifications if {
	holds("event_notifications")
	granted(input.notifications)
}

# webhooks belong to the account that registered them (a subaccount's are
# its own, so that a webhook receives only what its owner may list). A
# manager or user sees its own and those of the accounts it manages
# directly (a manager: its users'; a user: its subaccounts'), a subaccount
# with event_notifications its own; deliveries are reached through their
# webhook.
webhooks if unrestricted

# (its own rule, not visible(): a webhook's owner is what it delivers for,
# and data visibility may widen without widening who owns a webhook)
webhooks if {
	usable
	input.account.type in {"manager", "user"}
	input.webhooks.account_id == input.account.id
}

webhooks if {
	usable
	input.account.type in {"manager", "user"}
	input.webhooks.manager_id == input.account.id
}

webhooks if {
	holds("event_notifications")
	subaccount
	input.webhooks.account_id == input.account.id
}

# zones belong to an account and are seen like its rows (the account and
# the tree above it); a subaccount with event_notifications sees its
# parent's zones, which name no device (the rules that name them are
# scoped by their devices).
zones if unrestricted

zones if visible(input.zones)

zones if {
	holds("event_notifications")
	subaccount
	input.zones.account_id == input.account.manager_id
}

# objects are the devices: a subaccount sees those of its parent granted to it.
objects if unrestricted

objects if visible(input.objects)

objects if granted(input.objects)

# visible(row): the row belongs to the caller's own tree (managers and users).
visible(row) if {
	usable
	input.account.type in {"manager", "user"}
	row.account_id == input.account.id
}

visible(row) if {
	usable
	input.account.type == "manager"
	row.manager_id == input.account.id
}

# granted(row): the row belongs to the subaccount's parent and every device
# it names is granted to the subaccount.
granted(row) if {
	subaccount
	row.account_id == input.account.manager_id
	row.granted_to == input.account.id
}

subaccount if {
	usable
	input.account.type == "subaccount"
}

# holds(p): the subaccount holds privilege p.
holds(p) if p in input.account.privileges
