#!/usr/bin/env bash
# The measurements of docs/scaling.md, "Where one primary stops": for each
# data size, generate the synthetic data set (COPY throughput), serve it, and
# run the harness (read scenarios and passenger creates, API and floor).
#
#   scripts/scaling-bench.sh                 # small, medium and large
#   SIZES="small medium" DURATION=10s scripts/scaling-bench.sh
#   PGBOUNCER=1 SIZES=medium scripts/scaling-bench.sh   # the server through
#       a transaction-pooling PgBouncer (default_pool_size 8 for its 16
#       connections); adds SIZE-pgbouncer.stats: PgBouncer's CPU and counts
#
# Results land in $OUT (default /tmp/fleet-scaling): SIZE-generate.log (rows
# and seconds per table), SIZE.md (the harness table), SIZE.load (load
# average before and after), SIZE-tenants.txt (services per top-level
# tenant). The databases fleetapi_scale_SIZE on
# 127.0.0.1:5432 are dropped afterwards unless KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
SIZES=${SIZES:-"small medium large"}
OUT=${OUT:-/tmp/fleet-scaling}
DURATION=${DURATION:-5s}
WARMUP=${WARMUP:-1s}
CONCURRENCY=${CONCURRENCY:-16}
PORT=${PORT:-18191}
mkdir -p "$OUT"
tag=""; [ "${PGBOUNCER:-}" != 1 ] || tag="-pgbouncer"
go build -o "$OUT/fleetapi" ./cmd/fleetapi
go build -o "$OUT/fleetops" ./cmd/fleetops

for size in $SIZES; do
  case $size in
  small) gen=(--preset small) ;;
  # a tenth of large: the same shape (50 managers), a tenth of every table
  medium) gen=(--preset large --users 1000 --subaccounts 200 --devices 20000 --services 100000
    --reports 10000 --events 10000 --passengers 10000) ;;
  large) gen=(--preset large) ;;
  *) echo "unknown size $size" >&2; exit 2 ;;
  esac
  DB="postgres://postgres@127.0.0.1:5432/fleetapi_scale_${size}?sslmode=disable"
  echo "== $size: generate" >&2
  { echo "before generate: $(cat /proc/loadavg)"; } > "$OUT/$size$tag.load"
  "$OUT/fleetapi" generate "${gen[@]}" --today 2026-11-22 --force --database-url "$DB" \
    --tokens "$OUT/$size-tokens.jsonl" 2> "$OUT/$size-generate.log"
  echo "after generate: $(cat /proc/loadavg)" >> "$OUT/$size$tag.load"
  SERVE_DB="$DB"
  if [ "${PGBOUNCER:-}" = 1 ]; then
    # pgbouncer refuses root: run it as postgres, from a folder it can read
    pb="$OUT/pgbouncer"; mkdir -p "$pb"; chmod 755 "$pb"
    printf '"postgres" ""\n' > "$pb/userlist.txt"
    cat > "$pb/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=5432
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${PGBOUNCER_PORT:-16432}
unix_socket_dir =
auth_type = trust
auth_file = $pb/userlist.txt
admin_users = postgres
pool_mode = transaction
default_pool_size = 8
max_client_conn = 200
ignore_startup_parameters = extra_float_digits
INI
    chmod 644 "$pb"/*
    as=(); [ "$(id -u)" != 0 ] || as=(-u postgres)
    pgbouncer "${as[@]}" "$pb/pgbouncer.ini" > "$pb/pgbouncer.log" 2>&1 &
    bouncer=$!
    sleep 1
    t0=$(awk '{print $14 + $15}' "/proc/$bouncer/stat")
    SERVE_DB="postgres://postgres@127.0.0.1:${PGBOUNCER_PORT:-16432}/fleetapi_scale_${size}?sslmode=disable"
  fi
  FLEET_DATABASE_URL="$SERVE_DB" FLEET_ADDR="127.0.0.1:$PORT" FLEET_DECISION_LOG=off \
    "$OUT/fleetapi" serve > "$OUT/$size$tag-server.log" 2>&1 &
  server=$!
  trap 'kill $server 2>/dev/null || true' EXIT
  for _ in $(seq 1 60); do
    curl -fs "http://127.0.0.1:$PORT/readyz" > /dev/null && break
    sleep 1
  done
  echo "== $size: bench" >&2
  echo "before bench: $(cat /proc/loadavg)" >> "$OUT/$size$tag.load"
  "$OUT/fleetops" bench --url "http://127.0.0.1:$PORT" --database-url "$DB" \
    --tokens "$OUT/$size-tokens.jsonl" --concurrency "$CONCURRENCY" --duration "$DURATION" --warmup "$WARMUP" \
    --server-pid "$server" --markdown "$OUT/$size$tag.md" > "$OUT/$size$tag.txt" 2>&1
  echo "after bench: $(cat /proc/loadavg)" >> "$OUT/$size$tag.load"
  if [ "${PGBOUNCER:-}" = 1 ]; then
    {
      # utime + stime of the pgbouncer process while it served, in clock ticks
      echo "pgbouncer cpu_ticks $(( $(awk '{print $14 + $15}' "/proc/$bouncer/stat") - t0 )) ticks_per_s $(getconf CLK_TCK)"
      psql -h 127.0.0.1 -p "${PGBOUNCER_PORT:-16432}" -U postgres -d pgbouncer -c "SHOW STATS" -c "SHOW POOLS"
    } > "$OUT/$size-pgbouncer.stats"
    kill "$bouncer"
  fi
  # Tenant sizes for the distribution plan: services per top-level tenant
  # (the root of each account tree), the largest first.
  psql -h 127.0.0.1 -U postgres -d "fleetapi_scale_${size}" -qAt -F ' ' > "$OUT/$size-tenants.txt" <<'SQL'
WITH RECURSIVE tree AS (
  -- a tenant's root: an account that is not an admin and whose manager is
  -- none or an admin
  SELECT a.id, a.id AS root FROM accounts a LEFT JOIN accounts m ON m.id = a.manager_id
  WHERE a.type <> 'admin' AND (m.id IS NULL OR m.type = 'admin')
  UNION ALL
  SELECT a.id, t.root FROM accounts a JOIN tree t ON a.manager_id = t.id)
, per_root AS (
  SELECT t.root, count(s.service_id) AS services
  FROM tree t LEFT JOIN services s ON s.account_id = t.id GROUP BY t.root)
SELECT 'tenants', count(*), 'total_services', sum(services),
       'largest', max(services), 'largest_share', round(100.0 * max(services) / nullif(sum(services), 0), 1),
       'median', percentile_disc(0.5) WITHIN GROUP (ORDER BY services)
FROM per_root WHERE services > 0;
SQL
  kill "$server"; wait "$server" 2>/dev/null || true
  trap - EXIT
  if [ "${KEEP:-}" != 1 ]; then
    psql -h 127.0.0.1 -U postgres -d postgres -qc "DROP DATABASE IF EXISTS fleetapi_scale_${size} WITH (FORCE)"
  fi
done
echo "results in $OUT" >&2
