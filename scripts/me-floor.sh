#!/usr/bin/env bash
# The fixed cost of a request, end to end (docs/performance.md, "The fixed
# cost of a request"): `GET /api/v2/me` of fleetapi against a trivial Go
# handler (`fleetops httpfloor`, the same answer size) in the same minute,
# with wrk at 64 connections, alternating, ROUNDS times each.
#
#   scripts/me-floor.sh                      # on the data set of scripts/perf-run.sh
#   ROUNDS=3 DURATION=10s scripts/me-floor.sh
#
# It needs wrk (Debian package wrk) and the data set and token file of
# scripts/perf-run.sh (run that once first: it generates them). Environment:
# PGURL, DB, CACHE as in perf-run.sh; ROUNDS (2), DURATION (10s),
# CONNECTIONS (64), THREADS (2), PORT (18181), FLOOR_PORT (18183), and
# extra environment for the server as usual (e.g. OTEL_TRACES_EXPORTER).
set -euo pipefail
cd "$(dirname "$0")/.."

PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
DB=${DB:-fleetapi_perf}
CACHE=${CACHE:-/tmp/fleetapi-perf-cache}
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-64}
THREADS=${THREADS:-2}
PORT=${PORT:-18181}
FLOOR_PORT=${FLOOR_PORT:-18183}
DBURL="$PGURL/$DB?sslmode=disable"
TOKENS="$CACHE/tokens-$DB.jsonl"

command -v wrk >/dev/null || { echo "me-floor: wrk is not installed (apt-get install wrk)" >&2; exit 2; }
[ -s "$TOKENS" ] || { echo "me-floor: no token file $TOKENS: run scripts/perf-run.sh once" >&2; exit 2; }
TOKEN=$(grep -m1 '"role":"user"' "$TOKENS" | sed 's/.*"token":"\([^"]*\)".*/\1/')
[ -n "$TOKEN" ] || { echo "me-floor: no user token in $TOKENS" >&2; exit 2; }

mkdir -p "$CACHE"
go build -o "$CACHE/fleetapi" ./cmd/fleetapi
go build -o "$CACHE/fleetops" ./cmd/fleetops

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

FLEET_DATABASE_URL="$DBURL" FLEET_ADDR="127.0.0.1:$PORT" "$CACHE/fleetapi" serve > "$CACHE/me-floor-server.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 1; done
curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/v2/me" > "$CACHE/me-body.json"
"$CACHE/fleetops" httpfloor --addr "127.0.0.1:$FLOOR_PORT" --body "$CACHE/me-body.json" > "$CACHE/me-floor-floor.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$FLOOR_PORT/" >/dev/null && break; sleep 0.2; done

# Warm both (connections, the auth and policy caches).
wrk -t"$THREADS" -c"$CONNECTIONS" -d2s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/v2/me" >/dev/null
wrk -t"$THREADS" -c"$CONNECTIONS" -d2s "http://127.0.0.1:$FLOOR_PORT/api/v2/me" >/dev/null

rps() { awk '/^Requests\/sec:/ {print $2}'; }
non2xx() { awk '/Non-2xx or 3xx responses:/ {print $5; f=1} END {if (!f) print 0}'; }
printf '| round | trivial req/s | /me req/s | /me non-2xx | /me share |\n|--:|--:|--:|--:|--:|\n'
for r in $(seq 1 "$ROUNDS"); do
  floor_out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" "http://127.0.0.1:$FLOOR_PORT/api/v2/me")
  me_out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/v2/me")
  f=$(echo "$floor_out" | rps); m=$(echo "$me_out" | rps); e=$(echo "$me_out" | non2xx)
  printf '| %d | %s | %s | %s | %s %% |\n' "$r" "$f" "$m" "$e" "$(awk -v m="$m" -v f="$f" 'BEGIN {printf "%.1f", 100*m/f}')"
done
echo "($(nproc) cores; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))"
