#!/usr/bin/env bash
# Regenerates the figures of docs/performance.md in one run: the large data
# set (generated when its database is missing or has no pool tokens), a
# fleetapi server, an OPA server with the exported policy set, then every
# scenario of the fixed and the mixed workload, the row-level-security and
# OPA-sidecar variants, and the EXPLAIN plans; the tables go to $OUT.
#
#   scripts/perf-run.sh                    # 16 clients, 10 s per side
#   OUT=/tmp/perf-64 scripts/perf-run.sh --concurrency 64 --duration 5s --warmup 1s \
#     --scenarios due_services,due_services_mixed,user_list_mixed --no-floor
#
# Arguments are passed to `fleetops bench` after the script's own flags
# (a repeated flag takes the later value; --scenarios replaces the list).
#
# Environment: PGURL (the PostgreSQL server, loopback), DB (database name,
# fleetapi_perf), OUT (directory of the results, /tmp/fleetapi-perf), CACHE
# (binaries and the token file, /tmp/fleetapi-perf-cache),
# CONCURRENCY (16), DURATION (10s), WARMUP (2s), SEED (1), PRESET (large),
# PORT (18181), OPA_PORT (18182). The `opa` command is built from the
# module cache into $OUT when it is not on PATH (it needs the modules of
# OPA's command line: `go mod download` fetches them; go.mod is restored).
# It takes about 11 minutes on a 2-core machine with the large data set
# already generated (25 measurements of DURATION + WARMUP per side), about
# 3 more to generate it.
set -euo pipefail
cd "$(dirname "$0")/.."

PGURL=${PGURL:-postgres://postgres@127.0.0.1:5432}
DB=${DB:-fleetapi_perf}
OUT=${OUT:-/tmp/fleetapi-perf}
CACHE=${CACHE:-/tmp/fleetapi-perf-cache}
CONCURRENCY=${CONCURRENCY:-16}
DURATION=${DURATION:-10s}
WARMUP=${WARMUP:-2s}
SEED=${SEED:-1}
PRESET=${PRESET:-large}
PORT=${PORT:-18181}
OPA_PORT=${OPA_PORT:-18182}
DBURL="$PGURL/$DB?sslmode=disable"
mkdir -p "$OUT" "$CACHE"

go build -o "$CACHE/fleetapi" ./cmd/fleetapi
go build -o "$CACHE/fleetops" ./cmd/fleetops

OPA=$(command -v opa || true)
if [ -z "$OPA" ]; then
  OPA="$CACHE/opa"
  if [ ! -x "$OPA" ]; then
    cp go.mod "$CACHE/go.mod.saved"; cp go.sum "$CACHE/go.sum.saved"
    GOFLAGS=-mod=mod go build -o "$OPA" github.com/open-policy-agent/opa
    cp "$CACHE/go.mod.saved" go.mod; cp "$CACHE/go.sum.saved" go.sum
  fi
fi

# The data set: generated unless the database holds it with the pool tokens.
TOKENS="$CACHE/tokens-$DB.jsonl"
if ! [ -s "$TOKENS" ] || ! grep -q '"pool":true' "$TOKENS" ||
   ! psql "$PGURL/$DB" -Atqc 'SELECT 1 FROM tokens LIMIT 1' >/dev/null 2>&1; then
  psql "$PGURL/postgres" -qc "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
  "$CACHE/fleetapi" generate --preset "$PRESET" --database-url "$DBURL" --tokens "$TOKENS"
fi

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

FLEET_DATABASE_URL="$DBURL" FLEET_ADDR="127.0.0.1:$PORT" "$CACHE/fleetapi" serve > "$OUT/server.log" 2>&1 &
SERVER=$!; pids+=("$SERVER")
rm -rf "$OUT/opa-policy"
"$CACHE/fleetops" bench --write-opa-policy "$OUT/opa-policy"
"$OPA" run --server --addr "127.0.0.1:$OPA_PORT" --log-level error "$OUT/opa-policy" > "$OUT/opa.log" 2>&1 &
OPAPID=$!; pids+=("$OPAPID")
for _ in $(seq 1 60); do
  curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && curl -sf "http://127.0.0.1:$OPA_PORT/health" >/dev/null && break
  sleep 1
done

start=$(date +%s)
"$CACHE/fleetops" bench --url "http://127.0.0.1:$PORT" --database-url "$DBURL" --tokens "$TOKENS" \
  --concurrency "$CONCURRENCY" --duration "$DURATION" --warmup "$WARMUP" --seed "$SEED" --server-pid "$SERVER" \
  --workload both --rls --opa-url "http://127.0.0.1:$OPA_PORT" --opa-pid "$OPAPID" \
  --explain "$OUT/plans.md" --markdown "$OUT/table.md" "$@" | tee "$OUT/run.txt"
end=$(date +%s)
{
  echo
  echo "measured in $((end - start)) s; $(nproc) cores; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg);"
  echo "server peak RSS (VmHWM): $(awk '/VmHWM/ {print $2, $3}' /proc/$SERVER/status)"
} | tee -a "$OUT/table.md"
echo "tables: $OUT/table.md, plans: $OUT/plans.md, text: $OUT/run.txt"
