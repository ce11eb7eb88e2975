#!/usr/bin/env bash
# A/B of two builds through the load harness (docs/performance.md, "Kept
# ids"): an earlier commit (BASE) and this tree, each with its own server
# and its own `fleetops bench`, alternating ROUNDS times on the data set of
# scripts/perf-run.sh, one scenario list, API only unless FLOOR=1.
#
#   BASE=c3f5d8b scripts/bench-ab.sh manager_list,manager_list_mixed
#   BASE=391676a ROUNDS=3 DURATION=10s scripts/bench-ab.sh admin_search,admin_search_mixed
#
# Each run writes its table to $OUT/<round>-<base|new>.md and the script
# prints scenario, API p50, p90, p99, req/s and server CPU per request of
# every run, base first. A run starts a fresh server (its caches empty), as
# a deployment does after a release.
#
# It needs the data set and token file of scripts/perf-run.sh (run that once
# first: it generates them). Environment: PGURL, DB, CACHE as in
# perf-run.sh; BASE (a commit, required), ROUNDS (2), DURATION (8s), WARMUP
# (2s), CONCURRENCY (16), PORT (18181), OUT (/tmp/fleetapi-ab), FLOOR (empty:
# --no-floor), BASE_ENV and NEW_ENV (space-separated NAME=value settings of
# each side's server, empty by default). With BASE=HEAD and a setting on one
# side only, the A/B is of one build with a switch, e.g. a paging shape off
# (docs/architecture.md, "Paging"):
#
#   BASE=HEAD BASE_ENV=FLEET_PAGING_OFF=deferred scripts/bench-ab.sh manager_list,manager_list_mixed
set -euo pipefail
cd "$(dirname "$0")/.."

PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
DB=${DB:-fleetapi_perf}
CACHE=${CACHE:-/tmp/fleetapi-perf-cache}
BASE=${BASE:?set BASE to the commit to compare with}
ROUNDS=${ROUNDS:-2}
DURATION=${DURATION:-8s}
WARMUP=${WARMUP:-2s}
CONCURRENCY=${CONCURRENCY:-16}
PORT=${PORT:-18181}
OUT=${OUT:-/tmp/fleetapi-ab}
DBURL="$PGURL/$DB?sslmode=disable"
TOKENS="$CACHE/tokens-$DB.jsonl"
SCENARIOS=${1:?usage: BASE=commit scripts/bench-ab.sh scenario[,scenario...]}
[ -s "$TOKENS" ] || { echo "bench-ab: no token file $TOKENS: run scripts/perf-run.sh once first" >&2; exit 2; }

mkdir -p "$OUT/base" "$OUT/new"
tree=$(mktemp -d)
cleanup() { git worktree remove --force "$tree" 2>/dev/null || rm -rf "$tree"; }
trap cleanup EXIT
git worktree add -q --detach "$tree" "$BASE"
(cd "$tree" && go build -o "$OUT/base/fleetapi" ./cmd/fleetapi && go build -o "$OUT/base/fleetops" ./cmd/fleetops)
go build -o "$OUT/new/fleetapi" ./cmd/fleetapi
go build -o "$OUT/new/fleetops" ./cmd/fleetops

floor=(--no-floor)
[ -z "${FLOOR:-}" ] || floor=()

run() { # side, round
  local bin="$OUT/$1" table="$OUT/$2-$1.md" settings
  if [ "$1" = base ]; then settings=${BASE_ENV:-}; else settings=${NEW_ENV:-}; fi
  # shellcheck disable=SC2086 # the settings are words on purpose
  env $settings FLEET_DATABASE_URL="$DBURL" FLEET_ADDR="127.0.0.1:$PORT" "$bin/fleetapi" serve > "$OUT/$2-$1.server.log" 2>&1 &
  local server=$!
  for _ in $(seq 1 60); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.5; done
  "$bin/fleetops" bench --url "http://127.0.0.1:$PORT" --database-url "$DBURL" --tokens "$TOKENS" \
    --concurrency "$CONCURRENCY" --duration "$DURATION" --warmup "$WARMUP" --server-pid "$server" \
    --scenarios "$SCENARIOS" --markdown "$table" "${floor[@]}" > "$OUT/$2-$1.txt" 2>&1 || true
  kill "$server"; wait "$server" 2>/dev/null || true
}

for round in $(seq 1 "$ROUNDS"); do
  run base "$round"
  run new "$round"
done
echo "scenario | API p50 ms | API p90 ms | API p99 ms | API req/s | server CPU µs/req (columns of fleetops bench --markdown)"
for round in $(seq 1 "$ROUNDS"); do
  for side in base new; do
    echo "-- round $round, $side"
    tail -n +3 "$OUT/$round-$side.md" | sed '/^$/,$d' | cut -d"|" -f2,4,5,6,7,15
  done
done
