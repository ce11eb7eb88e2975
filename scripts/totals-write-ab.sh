#!/usr/bin/env bash
# The write cost of the kept search totals (docs/performance.md, "Search
# totals"): pgbench, one client, synchronous_commit off (the statement and
# its triggers, not the WAL flush), alternating ROUNDS times between
#   old: count_rows() as before migration 20270110000001, and the
#        <table>_count_version triggers disabled;
#   new: the migration's count_rows() and triggers,
# for an object's odometer update (random of 200,000 devices), a service
# create, a passenger create and a service rename (an update of a searched
# column). It writes: run it on a copy of the data set that has the
# migration applied, never on the benchmark's fleetapi_perf:
#
#   createdb -T fleetapi_perf totals_perf   # or pg_dump | pg_restore
#   fleetapi migrate up --database-url postgres://postgres@127.0.0.1:5432/totals_perf
#   DB=totals_perf scripts/totals-write-ab.sh
#
# Environment: DB (required), HOST (127.0.0.1), ROUNDS (6), SECONDS_EACH (5),
# SCRIPTS ("odometer service passenger rename"). It leaves the new variant
# in force. Output: round, variant, statement, tps, load average.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DB:?name the copy of the data set}"
HOST=${HOST:-127.0.0.1}
ROUNDS=${ROUNDS:-6}
SECONDS_EACH=${SECONDS_EACH:-5}
SCRIPTS=${SCRIPTS:-odometer service passenger rename}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
up=migrations/20270110000001_count_versions.up.sql
down=migrations/20270110000001_count_versions.down.sql
tables="services objects reports events passengers"
sed -n '/^CREATE OR REPLACE FUNCTION count_rows/,/^\$\$;/p' "$down" >"$dir/old.sql"
sed -n '/^CREATE OR REPLACE FUNCTION count_rows/,/^\$\$;/p' "$up" >"$dir/new.sql"
for t in $tables; do
	echo "ALTER TABLE $t DISABLE TRIGGER ${t}_count_version;" >>"$dir/old.sql"
	echo "ALTER TABLE $t ENABLE TRIGGER ${t}_count_version;" >>"$dir/new.sql"
done
cat >"$dir/odometer.sql" <<'SQL'
\set id random(1, 200000)
\set km random(1, 50)
UPDATE objects SET odometer = odometer + :km, engine_hours = engine_hours + (:km % 2) WHERE id = :id;
SQL
cat >"$dir/service.sql" <<'SQL'
\set id random(1, 200000)
INSERT INTO services (account_id, imei, name, odo, odo_interval, odo_last, days, days_interval, days_last) SELECT account_id, imei, 'pgb ' || clock_timestamp()::text || random()::text, true, 10000, greatest(odometer - 9000, 0), true, 365, DATE '2026-01-01' FROM objects WHERE id = :id;
SQL
cat >"$dir/passenger.sql" <<'SQL'
\set id random(1, 12000)
INSERT INTO passengers (account_id, passenger_name) SELECT id, 'pgb' FROM accounts WHERE id = :id;
SQL
cat >"$dir/rename.sql" <<'SQL'
\set id random(1, 1000000)
UPDATE services SET name = CASE WHEN name LIKE '% (r)' THEN left(name, -4) ELSE name || ' (r)' END WHERE service_id = :id;
SQL
export PGOPTIONS='-c synchronous_commit=off'
for round in $(seq "$ROUNDS"); do
	for variant in old new; do
		psql -q -h "$HOST" -U postgres -d "$DB" -f "$dir/$variant.sql" >/dev/null
		for s in $SCRIPTS; do
			tps=$(pgbench -h "$HOST" -U postgres -n -c 1 -T "$SECONDS_EACH" -f "$dir/$s.sql" "$DB" 2>/dev/null | awk '/^tps/ {print $3; exit}')
			echo "$round $variant $s $tps $(cut -d' ' -f1 /proc/loadavg)"
		done
	done
done
psql -q -h "$HOST" -U postgres -d "$DB" -f "$dir/new.sql" >/dev/null
