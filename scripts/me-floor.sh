#!/usr/bin/env bash
# The fixed cost of a request, end to end (docs/performance.md, "The fixed
# cost of a request"): `GET /api/v2/me` of fleetapi against a trivial Go
# handler (`fleetops httpfloor`, the same answer size) in the same minute,
# with wrk at 64 connections, alternating, ROUNDS times each.
#
#   scripts/me-floor.sh                      # on the data set of scripts/perf-run.sh
#   ROUNDS=3 DURATION=10s scripts/me-floor.sh
#   BASE=/tmp/old/fleetapi ROUNDS=6 scripts/me-floor.sh   # and an earlier build, alternating (A/B)
#
# Each round measures the trivial handler, then /me of this tree's build
# (and of BASE when set, on BASE_PORT), and reports requests per second,
# the share of the trivial handler's, and the server's CPU per request
# (user + system time of its process over the run, from /proc): the CPU
# figure moves less than throughput on a shared machine.
#
# It needs wrk (Debian package wrk) and the data set and token file of
# scripts/perf-run.sh (run that once first: it generates them). Environment:
# PGURL, DB, CACHE as in perf-run.sh; ROUNDS (2), DURATION (10s),
# CONNECTIONS (64), THREADS (2), PORT (18181), FLOOR_PORT (18183), and
# BASE (a fleetapi binary to compare with), BASE_PORT (18184), and extra
# environment for the servers as usual (e.g. OTEL_TRACES_EXPORTER).
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
BASE=${BASE:-}
BASE_PORT=${BASE_PORT:-18184}
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
SERVER=$!; pids+=("$SERVER")
for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 1; done
if [ -n "$BASE" ]; then
  FLEET_DATABASE_URL="$DBURL" FLEET_ADDR="127.0.0.1:$BASE_PORT" "$BASE" serve > "$CACHE/me-floor-base.log" 2>&1 &
  BASE_SERVER=$!; pids+=("$BASE_SERVER")
  for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$BASE_PORT/readyz" >/dev/null && break; sleep 1; done
fi
curl -sf -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/v2/me" > "$CACHE/me-body.json"
"$CACHE/fleetops" httpfloor --addr "127.0.0.1:$FLOOR_PORT" --body "$CACHE/me-body.json" > "$CACHE/me-floor-floor.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$FLOOR_PORT/" >/dev/null && break; sleep 0.2; done

# Warm both (connections, the auth and policy caches).
wrk -t"$THREADS" -c"$CONNECTIONS" -d2s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$PORT/api/v2/me" >/dev/null
[ -z "$BASE" ] || wrk -t"$THREADS" -c"$CONNECTIONS" -d2s -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$BASE_PORT/api/v2/me" >/dev/null
wrk -t"$THREADS" -c"$CONNECTIONS" -d2s "http://127.0.0.1:$FLOOR_PORT/api/v2/me" >/dev/null

rps() { awk '/^Requests\/sec:/ {print $2}'; }
non2xx() { awk '/Non-2xx or 3xx responses:/ {print $5; f=1} END {if (!f) print 0}'; }
TICK=$(getconf CLK_TCK)
cputicks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# me PID PORT: one wrk run of /me; prints "req/s non-2xx cpu-µs/request"
me() {
  local c0 c1 out n
  c0=$(cputicks "$1")
  out=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:$2/api/v2/me")
  c1=$(cputicks "$1")
  n=$(echo "$out" | awk '/ requests in / {print $1}')
  echo "$(echo "$out" | rps) $(echo "$out" | non2xx) $(awk -v a="$c0" -v b="$c1" -v t="$TICK" -v n="$n" 'BEGIN {printf "%.1f", (b-a)*1e6/t/n}')"
}
share() { awk -v m="$1" -v f="$2" 'BEGIN {printf "%.1f", 100*m/f}'; }
if [ -z "$BASE" ]; then
  printf '| round | trivial req/s | /me req/s | /me non-2xx | /me share | server CPU µs/req |\n|--:|--:|--:|--:|--:|--:|\n'
else
  printf '| round | trivial req/s | /me req/s | /me non-2xx | /me share | server CPU µs/req | base /me req/s | base share | base CPU µs/req |\n|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n'
fi
for r in $(seq 1 "$ROUNDS"); do
  f=$(wrk -t"$THREADS" -c"$CONNECTIONS" -d"$DURATION" "http://127.0.0.1:$FLOOR_PORT/api/v2/me" | rps)
  read -r m e c <<<"$(me "$SERVER" "$PORT")"
  if [ -z "$BASE" ]; then
    printf '| %d | %s | %s | %s | %s %% | %s |\n' "$r" "$f" "$m" "$e" "$(share "$m" "$f")" "$c"
  else
    read -r bm _ bc <<<"$(me "$BASE_SERVER" "$BASE_PORT")"
    printf '| %d | %s | %s | %s | %s %% | %s | %s | %s %% | %s |\n' "$r" "$f" "$m" "$e" "$(share "$m" "$f")" "$c" "$bm" "$(share "$bm" "$f")" "$bc"
  fi
done
echo "($(nproc) cores; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))"
