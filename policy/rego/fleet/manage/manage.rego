# METADATA
# title: fleetapi management policy
# description: |
#   The management API of docs/design.md §9: which accounts a caller manages (the
#   management scope) and whether one management write may happen (the
#   management decision).
#
#   Management scope, data.fleet.manage.accounts: partially evaluated with
#   the UNKNOWN input.accounts (the account row) and input.account known,
#   exactly like the row scopes of fleet.scope; the residue becomes the SQL
#   WHERE clause on the accounts table. An admin manages every account
#   (unrestricted, the empty residue); a manager itself, the accounts whose
#   manager_id is it, and the subaccounts of those; a user itself and its
#   subaccounts; a subaccount itself; an account that cannot use the API
#   (inactive, expired, or of an unknown type, by its own state) nothing.
#   Contract with storage: the columns are input.accounts.<column> and only
#   id, manager_id, type (real columns) and grand_manager_id (virtual: the
#   manager of the account's manager, rendered by storage as a subquery)
#   are used. No rule has a default, no unknown is indexed by position.
#   Reads of /accounts, /tokens and /audit-events use this scope, and the
#   Go side checks every target of a write (and the manager_id of a new
#   account) against it with the scope query first: outside it is 404.
#
#   Management decision, data.fleet.manage.decision. Input
#   (schemas/manage_input.json): input.account is the caller as in
#   fleet.authz (with chain); input.token {id, permissions, expires_at,
#   rate_limit, generation} is the calling token, where generation is the
#   number of tokens that minted it (0 for one made by an operator),
#   expires_at an RFC 3339 time
#   or null (never expires) and rate_limit its effective limit in requests
#   per minute (its own, or the server default when it has none) or null
#   (unlimited); input.action is one of account.create, account.update,
#   grants.replace, object.create, object.move, token.create, token.revoke,
#   usage.read (GET /usage, docs/design.md §12: a read, not a write; the target is
#   the account whose usage is asked for, the caller's own when the request
#   names none; allowed when the target is in the caller's management
#   scope: an admin reads any account's usage, a manager its own, its
#   users' and their subaccounts', a user its own and its subaccounts', a
#   subaccount its own; no rule below applies to it);
#   account.erase;
#   input.target is the account acted on {id, type, manager_id (0: none),
#   chain (the accounts above it, nearest first, as in input.account.chain),
#   chain_complete (true when that chain could be loaded whole), owned_imei (grants.replace: the devices among change.imei that the
#   target's parent owns)}; for account.create it is the account the new
#   one is created under (its manager_id), or null for an account created
#   at the top; for tokens and objects it is the owning account (for
#   object.move the new owner: the Go side has checked the current owner
#   against the management scope too, 404 outside).
#   input.limits {rate_limit, quotas} are the caller's own account limits (null:
#   none), which what it sets on other accounts stays within (docs/design.md §12).
#   input.change holds the fields asked for: account.create {username,
#   email, type, manager_id (0: none), active, read_only, account_expire,
#   account_expire_dt, privileges, rate_limit (null: none), quotas (the
#   new account's limits: each a number of rows, or null for unlimited; an
#   omitted one filled in by the Go side)}; account.update exactly the fields of
#   the request body; grants.replace {imei: [...]}; object.create {imei,
#   name, account_id, ...}; object.move {imei, from_account_id,
#   account_id}; token.create {account_id, name, permissions,
#   expires_at, rate_limit}, with the values the new token will have: an
#   omitted expires_at or rate_limit is filled in by the Go side with the
#   creating token's before asking (same units as input.token); token.revoke
#   {} (the token id in change.token_id is informative); usage.read
#   {account_id, from, to} (informative); account.erase {}
#   (the target is the account whose subtree is erased, docs/design.md §12). An account.update
#   with quotas, and every account.create, has change.quotas {quota: the
#   limit the account will have, null for unlimited} and
#   input.limits.quotas, the caller's own limits in force ({subaccounts,
#   tokens, devices, passengers, events}, each a number or null for unlimited).
#
#   decision is always defined: {"allow": true} or {"allow": false, "code":
#   "MANAGEMENT_DENIED", "message", "details": {"reason", ...}}. When
#   several rules fail, the first of this list wins: unknown_action (an
#   action not listed above) > outside_scope (the target is not in the
#   caller's management scope; defence in depth behind the Go side's 404)
#   > outside_scope again for token.create (docs/design.md §9's second line behind
#   the fixed levels: a token is minted only for the caller's own account
#   or one below it whose data and management scopes are contained in the
#   caller's: any account for an admin, otherwise a user or a subaccount
#   in its scope, never a manager or an admin) > not_below_caller
#   (account.create: creation goes strictly downward within the fixed
#   levels of docs/design.md §2: an admin creates managers at the top or under an
#   admin and users at the top, under an admin or under a manager, never
#   a manager under a manager; a manager users under itself and
#   subaccounts under its users, a user subaccounts under itself, a
#   subaccount nothing, nobody an admin) >
#   wrong_target_type (grants.replace on an account that is not a
#   subaccount; object.create or object.move for a subaccount, which owns
#   no devices; account.erase of an admin, the operator's own) >
#   immutable_field (account.update of a field other than email, active,
#   read_only, account_expire, account_expire_dt, privileges, rate_limit,
#   quotas) > own_account (account.update of the caller's own active,
#   read_only, account_expire, account_expire_dt, privileges, rate_limit or
#   quotas; grants.replace and account.erase on the caller's own account) > exceeds_account
#   (account.create or account.update: a rate_limit higher than the
#   caller's own account limit input.limits.rate_limit, or none when the
#   caller has one) > exceeds_own_quota (account.create or account.update
#   of a quota above the caller's own limit in force, input.limits.quotas,
#   docs/design.md §12; an admin sets any) > privilege_not_held (a privilege outside
#   reports, event_notifications, or not held by the caller, which holds
#   both unless it is a subaccount) > device_not_owned (grants.replace: a
#   device the target's parent does not own) > exceeds_token (token.create:
#   a permission not covered by the creating token's, then an expires_at
#   later than its, then a rate_limit higher than its, then a creating
#   token minted max_generation times over). Write access
#   (READ_ONLY_ACCOUNT) and the caller's state are the route decision's
#   (fleet.authz), not repeated here; a caller that cannot use the API
#   manages nothing, so it meets outside_scope. Missing or malformed facts
#   count against the caller (fail closed).
# schemas:
#   - input: schema.manage_input
#   - input.accounts: schema.account_row
package fleet.manage

# actions are the management writes the decision knows.
actions := {
	"account.create",
	"account.update",
	"grants.replace",
	"object.create",
	"object.move",
	"account.erase",
	"token.create",
	"token.revoke",
	"usage.read",
}

# all_privileges are the subaccount privileges.
all_privileges := ["event_notifications", "reports"]

# updatable are the fields account.update may change.
updatable := {"email", "active", "read_only", "account_expire", "account_expire_dt", "privileges", "rate_limit", "quotas", "timezone"}

# own_limits are the fields nobody changes on its own account.
own_limits := {"active", "read_only", "account_expire", "account_expire_dt", "privileges", "rate_limit", "quotas"}

# quota_names are the quotas of docs/design.md §12 an account.update may set.
quota_names := {"subaccounts", "tokens", "devices", "passengers", "webhooks", "zones", "events"}

# usable: the caller may use the API at all (its own state; the chain is
# fleet.authz's).
usable if {
	input.account.active == true
	input.account.expired == false
	input.account.type in {"admin", "manager", "user", "subaccount"}
}

# unrestricted marks callers that manage every account (admins).
unrestricted if {
	usable
	input.account.type == "admin"
}

accounts if unrestricted

accounts if manages(input.accounts)

# manages(a): the caller, not an admin, manages account row a {id,
# manager_id, type, grand_manager_id}. The scope and the decision share it.
manages(a) if {
	usable
	a.id == input.account.id
}

manages(a) if {
	usable
	input.account.type == "manager"
	a.manager_id == input.account.id
}

manages(a) if {
	usable
	input.account.type == "manager"
	a.type == "subaccount"
	a.grand_manager_id == input.account.id
}

manages(a) if {
	usable
	input.account.type == "user"
	a.type == "subaccount"
	a.manager_id == input.account.id
}

# target_row is input.target as a row of the management scope.
target_row := {
	"id": input.target.id,
	"manager_id": input.target.manager_id,
	"type": input.target.type,
	"grand_manager_id": grand_manager_id,
}

# in_scope: the target is well formed and managed by the caller.
in_scope if {
	target_known
	unrestricted
}

in_scope if {
	target_known
	manages(target_row)
}

target_known if {
	is_number(input.target.id)
	is_number(input.target.manager_id)
	is_string(input.target.type)
	input.target.chain_complete == true
}

grand_manager_id := g if {
	g := input.target.chain[1].id
} else := null

# Equivalent mutants of `policy test --mutate` (docs/policy.md §11.2): the
# guards `some _ in immutable`, `some _ in not_held`, `some _ in not_owned`
# and `not permissions_within` restate what their branch's value already
# needs (immutable[0], not_held[0], not_owned[0], uncovered[0]; uncovered
# is always defined and permissions_within is count(uncovered) == 0):
# without them the value is undefined when the list is empty, and Rego then
# goes on to the next else, exactly as when the guard fails.
# mutation: equivalent 03ef84bb7c21 body → true (immutable_field): immutable[0] in the value needs `some _ in immutable`
# mutation: equivalent 985974bd78e4 body → true (exceeds_own_quota): above_own_quota[0] in the value needs `some _ in above_own_quota`
# mutation: equivalent d999536ceeef body → true (privilege_not_held): not_held[0] in the value needs `some _ in not_held`
# mutation: equivalent c1c1380524fb body → true (device_not_owned): not_owned[0] in the value needs `some _ in not_owned`
# mutation: equivalent 91d835e72fbb delete `not permissions_within` (exceeds_token permissions): uncovered[0] in the value needs it
decision := deny("unknown_action", "the management action is not known", {"action": action}) if {
	# object.get, not input.action: the operand of `in` is evaluated
	# outside the `not`, so a missing action would make this undefined
	not action in actions
} else := deny("outside_scope", "the target account is not managed by the caller", {}) if {
	not create_at_top
	not in_scope
} else := deny(
	"outside_scope",
	"a token can only be minted for the caller's own account or an account whose scopes are within the caller's",
	{"target_type": object.get(input, ["target", "type"], null)},
) if {
	input.action == "token.create"
	not mint_within
} else := deny(
	"not_below_caller",
	"an account can only be created below the caller",
	{"type": object.get(input, ["change", "type"], null)},
) if {
	input.action == "account.create"
	not may_create
} else := deny(
	"wrong_target_type",
	"the action does not apply to this type of account",
	{"target_type": object.get(input, ["target", "type"], null)},
) if {
	wrong_target_type
} else := deny(
	"immutable_field",
	sprintf("the field %s cannot be changed", [immutable[0]]),
	{"field": immutable[0]},
) if {
	some _ in immutable
} else := deny(
	"own_account",
	"an account cannot change its own limits",
	{"fields": own_changes},
) if {
	own_change
} else := deny(
	"exceeds_account",
	"the account's rate limit would be higher than the caller's own account limit",
	{"field": "rate_limit", "limit": object.get(input, ["limits", "rate_limit"], null)},
) if {
	input.action in {"account.create", "account.update"}
	not account_rate_within
} else := deny(
	"exceeds_own_quota",
	sprintf("the caller cannot set the %s quota above its own", [above_own_quota[0]]),
	{"quota": above_own_quota[0], "limit": object.get(input, ["limits", "quotas", above_own_quota[0]], null)},
) if {
	some _ in above_own_quota
} else := deny(
	"privilege_not_held",
	sprintf("the caller cannot grant the privilege %s", [not_held[0]]),
	{"privilege": not_held[0]},
) if {
	some _ in not_held
} else := deny(
	"device_not_owned",
	sprintf("the device %s is not owned by the subaccount's parent", [not_owned[0]]),
	{"imei": not_owned[0]},
) if {
	some _ in not_owned
} else := deny(
	"exceeds_token",
	sprintf("the new token's permission %s is not held by the creating token", [uncovered[0]]),
	{"field": "permissions", "permission": uncovered[0]},
) if {
	input.action == "token.create"
	not permissions_within
} else := deny(
	"exceeds_token",
	"the new token would expire later than the creating token",
	{"field": "expires_at"},
) if {
	input.action == "token.create"
	not expiry_within
} else := deny(
	"exceeds_token",
	"the new token's rate limit is higher than the creating token's",
	{"field": "rate_limit"},
) if {
	input.action == "token.create"
	not rate_within
} else := deny(
	"exceeds_token",
	"the creating token was itself minted too many times over to mint another",
	{"field": "generation", "max_generation": max_generation},
) if {
	input.action == "token.create"
	not generation_within
} else := {"allow": true}

# action is input.action, or null when there is none.
action := object.get(input, "action", null)

deny(reason, message, details) := {
	"allow": false,
	"code": "MANAGEMENT_DENIED",
	"message": message,
	"details": object.union(details, {"reason": reason}),
}

# create_at_top: account.create with no account above the new one; only
# may_create decides it.
create_at_top if {
	input.action == "account.create"
	input.target == null
}

# may_create: the caller may create an account of change.type under
# input.target (docs/design.md §9, strictly downward). change.manager_id must name
# the target.
#
# Equivalent mutants: may_create is read only in the not_below_caller
# branch of decision. Every rule below that has under_target needs a target
# with a numeric id, so create_at_top is false there and the outside_scope
# branch has already denied the request unless in_scope holds, and both
# in_scope rules need usable (through unrestricted or manages). Their
# `usable` states the rule on its own; deleting it cannot change a decision.
# mutation: equivalent c99bced0ab8d delete `usable` (manager creates a user under itself): in_scope, checked first, needs usable
# mutation: equivalent 822fcf46a2d6 delete `usable` (manager creates a subaccount under its user): in_scope, checked first, needs usable
# mutation: equivalent 30ec424e5169 delete `usable` (user creates a subaccount under itself): in_scope, checked first, needs usable
may_create if {
	unrestricted
	input.change.type in {"manager", "user"}
	create_at_top
	input.change.manager_id == 0
}

may_create if {
	unrestricted
	input.change.type in {"manager", "user"}
	under_target
	input.target.type == "admin"
}

# a user under a manager; never a manager under a manager (docs/design.md §2)
may_create if {
	unrestricted
	input.change.type == "user"
	under_target
	input.target.type == "manager"
}

may_create if {
	usable
	input.account.type == "manager"
	input.change.type == "user"
	under_target
	input.target.id == input.account.id
}

may_create if {
	usable
	input.account.type == "manager"
	input.change.type == "subaccount"
	under_target
	input.target.type == "user"
	input.target.manager_id == input.account.id
}

may_create if {
	usable
	input.account.type == "user"
	input.change.type == "subaccount"
	under_target
	input.target.id == input.account.id
}

# under_target: the new account's manager_id is the target.
#
# Equivalent mutants: under_target is read only by may_create in the
# not_below_caller branch, which a request reaches either at the top
# (input.target is null, so input.target.id is undefined and the equality
# fails anyway) or with in_scope, whose target_known already requires both
# input.target.id and input.target.manager_id to be numbers.
# mutation: equivalent 8acb6c434e90 delete `is_number(input.target.id)`: target_known (in_scope, checked first) requires it, and a null target has no id
# mutation: equivalent 4059f495ad59 is_number(input.target.id) → is_number(input.target.manager_id): target_known requires both, and a null target has neither
under_target if {
	is_number(input.target.id)
	input.change.manager_id == input.target.id
}

# mint_within: a token.create whose target (the new token's account,
# already in the caller's scope) is the caller's own account or one below
# it whose data and management scopes are contained in the caller's
# (docs/design.md §9, a second line behind the fixed levels): for an admin any
# account; otherwise a user or a subaccount. In a manager's scope a user is
# one of its own (it sees the user's rows and manages its subaccounts) and
# a subaccount sees a part of its parent's rows, which the manager sees; a
# user's scope holds only its subaccounts. A manager (or an admin) is never
# such an account for anyone but an admin and itself: a manager's scope
# holds its own users, which no other manager's does, and a token minted
# for it would read and mint as them (issue 19's attack).
mint_within if input.target.id == input.account.id

mint_within if unrestricted

mint_within if input.target.type in {"user", "subaccount"}

wrong_target_type if {
	input.action == "grants.replace"
	not object.get(input.target, "type", null) == "subaccount"
}

wrong_target_type if {
	input.action in {"object.create", "object.move"}
	not object.get(input.target, "type", null) in {"admin", "manager", "user"}
}

# An admin account is never erased through the API (the operator's own);
# every other type in the caller's scope may be, except the caller's own.
wrong_target_type if {
	input.action == "account.erase"
	not object.get(input.target, "type", null) in {"manager", "user", "subaccount"}
}

# immutable are the fields of an account.update that it may not change,
# sorted.
immutable := sort([k |
	input.action == "account.update"
	some k, _ in input.change
	not k in updatable
])

# own_changes are the own limits an account.update of the caller's own
# account asks to change, sorted.
own_changes := sort([k |
	some k, _ in input.change
	k in own_limits
])

own_change if {
	input.action == "account.update"
	own_target
	some _ in own_changes
}

own_change if {
	input.action == "grants.replace"
	own_target
}

own_change if {
	input.action == "account.erase"
	own_target
}

own_target if input.target.id == input.account.id

# above_own_quota are the quotas an account.create or account.update asks
# to set higher than the caller's own limit in force (input.limits.quotas;
# null: unlimited), sorted; ["quotas"] when change.quotas is not an object.
# One rule for both: a new account's limits (its omitted quotas filled in
# by the Go side) are judged as a change of an existing one's (issue 34
# item 3). An admin sets any quota; unlimited (null) is above every number;
# a quota the caller's limits do not name counts against it.
above_own_quota := ["quotas"] if {
	input.action in {"account.create", "account.update"}
	not is_object(object.get(input.change, "quotas", {}))
} else := sort([q |
	input.action in {"account.create", "account.update"}
	some q, v in object.get(input.change, "quotas", {})
	not quota_within(q, v)
])

quota_within(_, _) if unrestricted

quota_within(q, _) if {
	q in quota_names
	input.limits.quotas[q] == null
}

quota_within(q, v) if {
	q in quota_names
	is_number(v)
	is_number(input.limits.quotas[q])
	v <= input.limits.quotas[q]
}

# held are the privileges the caller holds: both unless it is a subaccount.
held := all_privileges if {
	input.account.type in {"admin", "manager", "user"}
} else := [p | some p in input.account.privileges; p in all_privileges]

# not_held are the privileges an account.create or account.update asks to
# set that the caller does not hold (or that do not exist), sorted. A
# privilege list that is not a list of strings counts as not held.
#
# Equivalent mutant: decision reads not_held only as `some _ in not_held`
# and not_held[0], which are undefined alike for [] and for an undefined
# not_held; the final `else := []` only makes the rule total for readers.
# mutation: equivalent 62f2dbce1866 `else := []` → never: an undefined not_held and [] are read alike (`some _ in`, [0])
not_held := sort([p |
	some p in object.get(input.change, "privileges", [])
	not p in held
]) if {
	input.action in {"account.create", "account.update"}
	is_array(object.get(input.change, "privileges", []))
} else := ["(not a list)"] if {
	input.action in {"account.create", "account.update"}
} else := []

# not_owned are the devices of a grants.replace that the target's parent
# does not own, sorted; a device list that is not a list counts as not
# owned.
#
# Equivalent mutant: as for not_held, decision reads not_owned only as
# `some _ in not_owned` and not_owned[0].
# mutation: equivalent 3d796be28cb7 `else := []` → never: an undefined not_owned and [] are read alike (`some _ in`, [0])
not_owned := sort([d |
	input.action == "grants.replace"
	some d in input.change.imei
	not d in object.get(input.target, "owned_imei", [])
]) if {
	is_array(input.change.imei)
} else := ["(not a list)"] if {
	input.action == "grants.replace"
} else := []

# uncovered are the new token's permissions that the creating token's do
# not cover, sorted; a permission list that is not a list is not covered.
uncovered := sort([p | some p in input.change.permissions; not covered(p)]) if {
	is_array(input.change.permissions)
} else := ["(not a list)"]

# Equivalent mutant: the exceeds_token branch that reads `not
# permissions_within` also needs uncovered[0] (see decision), so a
# permissions_within that never holds leaves every decision as it is.
# mutation: equivalent 7dacaa2641c6 body → false: the branch's value uncovered[0] is undefined exactly when permissions_within holds
permissions_within if count(uncovered) == 0

# covered(p): "*" covers every permission, "METHOD *" every route of that
# method, and a permission covers itself.
covered(_) if "*" in input.token.permissions

covered(p) if p in input.token.permissions

covered(p) if {
	[method, route] := split(p, " ")
	startswith(route, "/")
	sprintf("%s *", [method]) in input.token.permissions
}

# expiry_within: the new token expires no later than the creating one
# (null: never).
#
# Equivalent mutants: time.parse_rfc3339_ns of a value that is not a string
# is a builtin error, which makes the expression undefined (fleetapi, like
# `opa test` and `opa eval`, evaluates without strict builtin errors), so
# the rule fails as it does on the guard. The guards keep the rule failing
# closed, rather than raising an error, under strict builtin errors.
# mutation: equivalent 7dc5f698b245 delete `is_string(input.change.expires_at)`: time.parse_rfc3339_ns of a non-string is undefined (non-strict builtin errors)
# mutation: equivalent 625f2f0218b1 delete `is_string(input.token.expires_at)`: time.parse_rfc3339_ns of a non-string is undefined (non-strict builtin errors)
expiry_within if input.token.expires_at == null

expiry_within if {
	is_string(input.change.expires_at)
	is_string(input.token.expires_at)
	time.parse_rfc3339_ns(input.change.expires_at) <= time.parse_rfc3339_ns(input.token.expires_at)
}

# account_rate_within: an account.create or account.update gives the
# account a rate_limit (requests per minute, docs/design.md §12) no higher than the
# caller's own account limit (input.limits.rate_limit; null: the caller has
# none, and may set any). A caller with a limit cannot give an account none
# (null): unlimited is higher than any limit. An account.update that does
# not name rate_limit sets none.
account_rate_within if not "rate_limit" in object.keys(input.change)

account_rate_within if input.limits.rate_limit == null

account_rate_within if {
	is_number(input.change.rate_limit)
	is_number(input.limits.rate_limit)
	input.change.rate_limit <= input.limits.rate_limit
}

# max_generation is how many minting ancestors a token may have
# (tenancy.MaxTokenGeneration; a Go test keeps the two equal): a token
# minted that many times over mints no more, so that a request counts
# against a bounded number of rate-limit budgets (its own and every
# minter's, issue 19 item 7).
max_generation := 8

# generation_within: the creating token has fewer than max_generation
# minting ancestors (input.token.generation), so the new token has at most
# max_generation. A missing or non-numeric generation is not within.
generation_within if {
	is_number(input.token.generation)
	input.token.generation < max_generation
}

# rate_within: the new token's limit is not higher than the creating one's
# (null: unlimited).
rate_within if input.token.rate_limit == null

rate_within if {
	is_number(input.change.rate_limit)
	is_number(input.token.rate_limit)
	input.change.rate_limit <= input.token.rate_limit
}
