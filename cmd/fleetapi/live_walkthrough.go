package main

import "strings"

// liveWalkthroughStart and liveWalkthroughEnd frame the live data
// walkthrough in dev's output and in docs/live.md, so that it can be cut
// out and pasted (and tested) whole.
const (
	liveWalkthroughStart = "# --- live data walkthrough (paste into bash while `fleetapi dev` runs; needs curl) ---"
	liveWalkthroughEnd   = "# --- end of live data walkthrough ---"
)

// liveWalkthroughScript is the live data walkthrough of docs/live.md
// (docs/design.md §14): the demo user acme opens its notification stream
// in the background, Truck 7's tracker posts a reading below the limit of
// the demo rule "Truck 7 overspeed" (90 km/h) and one above it, and the
// overspeed notification arrives on the stream; the list and the truck's
// current state show it too. Each paste posts two new readings (times from
// the clock, a second apart), so it can be pasted again. {{API}} stands
// for the API's base URL.
const liveWalkthroughScript = `API={{API}}
ACME='Authorization: Bearer flt_demoAcme000000000000000000000000'
JSON='Content-Type: application/json'
OUT=$(mktemp)
# 1. acme watches its notifications: the stream (Server-Sent Events) runs in the background into $OUT.
curl -s -N -H "$ACME" $API/notifications/stream > $OUT & STREAM=$!
sleep 1
# 2. Truck 7's tracker (IMEI 356938035643809; the demo rule "Truck 7 overspeed" fires above 90 km/h) reports 72 km/h: nothing fires.
curl -s -H "$ACME" -H "$JSON" -d '{"readings":[{"imei":"356938035643809","time":"'$(date -u +%FT%TZ)'","lat":52.5200,"lon":13.4050,"speed":72,"ignition":true}]}' $API/readings; echo
sleep 1
# 3. A second later it reports 104 km/h: the rule fires, once (it re-arms when the speed falls back to 90 or below).
T=$(date -u +%FT%TZ)
curl -s -H "$ACME" -H "$JSON" -d '{"readings":[{"imei":"356938035643809","time":"'$T'","lat":52.5203,"lon":13.4061,"speed":104,"ignition":true}]}' $API/readings; echo
# 4. The notification arrives on the stream: id, event and the notification as data.
for i in $(seq 50); do grep -q "$T" $OUT && break; sleep 0.2; done
kill $STREAM; wait $STREAM 2>/dev/null; grep -B2 "$T" $OUT; rm -f $OUT
# 5. It is in the list as well, and the truck's current state is the newer reading.
curl -s -H "$ACME" "$API/notifications?type=overspeed&imei=356938035643809&per_page=1"; echo
curl -s -H "$ACME" "$API/objects?imei=356938035643809"; echo
`

// liveWalkthrough is the live data walkthrough for the server at addr,
// framed by liveWalkthroughStart and liveWalkthroughEnd.
func liveWalkthrough(addr string) string {
	return liveWalkthroughStart + "\n" + strings.ReplaceAll(liveWalkthroughScript, "{{API}}", "http://"+addr+"/api/v2") + liveWalkthroughEnd + "\n"
}
