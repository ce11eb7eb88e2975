#!/usr/bin/env bash
# Manager pages on fleetapi_perf (docs/performance.md, "Manager pages"): the
# page statement of GET /services?per_page=50&page=P as storage renders it
# for managers of 222,300 down to 4,400 services, read by walking the
# primary key (OFFSET) and as a deferred join (the page's ids from the
# counting shape ordered by id + 0, then the rows), and which one storage
# chooses (deferPage: the walk when (offset + 51) × table rows ≤ 2 × rows²).
# Read-only. Prints table rows: best of 3 EXPLAIN ANALYZE execution times
# (ms) of each shape, and the choice. Needs psql and jq; DB is the database URL.
set -euo pipefail
DB=${DB:-postgres://postgres@127.0.0.1:5432/fleetapi_perf}
best() { # sql -> best execution time of 3
  local b="" t out
  for _ in 1 2 3; do
    out=$(psql "$DB" -Atqc "EXPLAIN (ANALYZE, FORMAT JSON) $1")
    t=$(jq '.[0]["Execution Time"]' <<<"$out")
    if [ -z "$b" ] || awk "BEGIN{exit !($t < $b)}"; then b=$t; fi
  done
  printf '%.2f' "$b"
}
table=$(psql "$DB" -Atqc "SELECT reltuples::bigint FROM pg_class WHERE oid = 'services'::regclass")
echo "| manager | services | page | walk ms | deferred ms | storage reads |"
echo "|--:|--:|--:|--:|--:|---|"
for m in ${MANAGERS:-2 5 11 20 30 51}; do
  rows=$(psql "$DB" -Atqc "SELECT count(*) FROM services WHERE account_id IN (SELECT id FROM accounts WHERE id = $m OR manager_id = $m)")
  page_scope="((\"s\".\"account_id\" = $m OR \"s\".\"account_id\" IN (SELECT \"owner\".\"id\" FROM \"accounts\" AS \"owner\" WHERE \"owner\".\"manager_id\" = $m)))"
  count_scope="((\"s\".\"account_id\" IN (SELECT \"owner\".\"id\" FROM \"accounts\" AS \"owner\" WHERE \"owner\".\"id\" = $m OR \"owner\".\"manager_id\" = $m)))"
  for page in ${PAGES:-1 10 20 100}; do
    off=$(( (page - 1) * 50 ))
    walk="SELECT \"s\".* FROM \"services\" AS \"s\" WHERE $page_scope ORDER BY \"s\".\"service_id\" ASC LIMIT 51 OFFSET $off"
    deferred="SELECT \"s\".* FROM \"services\" AS \"s\" WHERE $page_scope AND (\"s\".\"service_id\" IN (SELECT \"s\".\"service_id\" FROM \"services\" AS \"s\" WHERE $count_scope ORDER BY \"s\".\"service_id\" + 0 ASC LIMIT 51 OFFSET $off)) ORDER BY \"s\".\"service_id\" ASC LIMIT 51"
    choice=walk
    if awk "BEGIN{exit !(($off + 51) * $table > 2 * $rows * $rows)}"; then choice=deferred; fi
    echo "| $m | $rows | $page | $(best "$walk") | $(best "$deferred") | $choice |"
  done
done
