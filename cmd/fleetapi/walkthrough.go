package main

import (
	"net/url"
	"strings"
)

// walkthroughStart and walkthroughEnd frame the management walkthrough in
// dev's output, so that it can be cut out and pasted (and tested) whole.
const (
	walkthroughStart = "# --- management walkthrough (paste into bash; needs only curl and sed) ---"
	walkthroughEnd   = "# --- end of management walkthrough ---"
)

// walkthroughScript is the management walkthrough of docs/management.md
// (docs/design.md §9): the demo manager fleetco onboards a customer, gives it a
// device and a token; the customer creates a subaccount, grants it the
// device and mints a read-only integration token; the audit trail shows
// it all. Ids and secrets are captured from the responses with sed, so
// the lines work whatever ids the database assigns; each response is also
// shown (tee /dev/stderr). {{API}} stands for the API's base URL.
const walkthroughScript = `# Paste it once into a fresh demo database: the accounts and token names it creates are unique, and
# afterwards ` + "`fleetapi dev`" + ` refuses the database (it holds accounts that are not demo data) until it is dropped.
API={{API}}
MGR='Authorization: Bearer flt_demoFleetco000000000000000000000'
JSON='Content-Type: application/json'
id() { sed -n 's/^{"success":true,"data":{"id":\([0-9]*\).*/\1/p'; }
secret() { sed -n 's/.*"secret":"\([^"]*\)".*/\1/p'; }
# 1. The manager fleetco onboards a customer: a user account under itself (a retry with the same Idempotency-Key returns the same account).
ME=$(curl -s -H "$MGR" $API/me | id)
CUST=$(curl -s -H "$MGR" -H "$JSON" -H 'Idempotency-Key: walkthrough-initech' -d '{"username":"initech","email":"ops@initech.example","type":"user","manager_id":'$ME'}' $API/accounts | tee /dev/stderr | id)
# 2. The manager registers the customer's first device and mints the customer's token (the secret is shown once).
curl -s -H "$MGR" -H "$JSON" -H 'Idempotency-Key: walkthrough-truck' -d '{"imei":"490154203237518","name":"Truck 1","account_id":'$CUST',"odometer":1200,"engine_hours":40}' $API/objects; echo
CUST_AUTH="Authorization: Bearer $(curl -s -H "$MGR" -H "$JSON" -d '{"account_id":'$CUST',"name":"initech-admin","permissions":["*"]}' $API/tokens | tee /dev/stderr | secret)"
# 3. The customer creates a subaccount for an integration, with the reports privilege it holds itself.
SUB=$(curl -s -H "$CUST_AUTH" -H "$JSON" -H 'Idempotency-Key: walkthrough-initech-api' -d '{"username":"initech-api","email":"api@initech.example","type":"subaccount","manager_id":'$CUST',"privileges":["reports"]}' $API/accounts | tee /dev/stderr | id)
# 4. The customer grants the subaccount its device (only its own devices can be granted).
curl -s -X PUT -H "$CUST_AUTH" -H "$JSON" -d '{"imei":["490154203237518"]}' $API/accounts/$SUB/objects; echo
# 5. The customer mints a read-only integration token for the subaccount: GET routes only, 60 requests a minute.
INT_AUTH="Authorization: Bearer $(curl -s -H "$CUST_AUTH" -H "$JSON" -d '{"account_id":'$SUB',"name":"initech-integration","permissions":["GET *"],"rate_limit":60}' $API/tokens | tee /dev/stderr | secret)"
# 6. The integration token reads the granted device and nothing else; it cannot write.
curl -s -H "$INT_AUTH" $API/objects; echo
curl -s -H "$INT_AUTH" -H "$JSON" -d '{"account_id":'$SUB',"name":"wider","permissions":["*"]}' $API/tokens; echo   # 403 TOKEN_PERMISSION_DENIED
# 7. Escalation is refused: the customer cannot change its own limits.
curl -s -X PATCH -H "$CUST_AUTH" -H "$JSON" -d '{"read_only":false}' $API/accounts/$CUST; echo   # 403 MANAGEMENT_DENIED own_account
# 8. The audit trail: the customer sees the changes in its scope, newest first (never a secret or a hash).
curl -s -H "$CUST_AUTH" "$API/audit-events"; echo
`

// managementWalkthrough is the walkthrough for the server at addr,
// framed by walkthroughStart and walkthroughEnd.
func managementWalkthrough(addr string) string {
	return walkthroughStart + "\n" + strings.ReplaceAll(walkthroughScript, "{{API}}", "http://"+addr+"/api/v2") + walkthroughEnd + "\n"
}

// tenantWalkthroughVars are the first lines of the tenant walkthrough of
// docs/tenants.md for the server at addr on the database databaseURL: the
// API's base URL and the database the walkthrough's fleetapi commands read.
// dev prints them; a password in databaseURL is printed as "xxxxx".
func tenantWalkthroughVars(addr, databaseURL string) string {
	shown := databaseURL
	if u, err := url.Parse(databaseURL); err == nil {
		shown = u.Redacted()
	}
	return "API=http://" + addr + "/api/v2\nexport FLEET_DATABASE_URL='" + shown + "'\n"
}
