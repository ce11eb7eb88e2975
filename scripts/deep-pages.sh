#!/usr/bin/env bash
# Deep pages on fleetapi_perf (docs/performance.md, "Deep pages"): the page
# statement of GET /services as storage renders it (LIMIT per_page + 1), by
# OFFSET and by keyset (after), at pages 1, 100 and 1000, for the largest
# manager (account 2, 222,300 services, per_page 200) and the admin (1,000,000,
# per_page 500), in id order and (admin) by name. Read-only. Prints table rows:
# best of 3 EXPLAIN ANALYZE execution times (ms) and the buffers of the last.
# Needs psql and jq; DB is the database URL.
set -euo pipefail
DB=${DB:-postgres://postgres@127.0.0.1:5432/fleetapi_perf}
run() { # label, sql
  best=""; for _ in 1 2 3; do
    out=$(psql "$DB" -Atqc "SET max_parallel_workers_per_gather = 0" -c "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) $2")
    t=$(jq '.[0]["Execution Time"]' <<<"$out"); b=$(jq '.[0].Plan["Shared Hit Blocks"] + .[0].Plan["Shared Read Blocks"]' <<<"$out")
    if [ -z "$best" ] || awk "BEGIN{exit !($t < $best)}"; then best=$t; fi
  done
  printf '| %s | %.2f | %s |\n' "$1" "$best" "$b"
}
scope_manager='("s"."account_id" = 2 OR "s"."account_id" IN (SELECT "owner"."id" FROM "accounts" AS "owner" WHERE "owner"."manager_id" = 2))'
for who in manager admin; do
  if [ $who = manager ]; then scope=$scope_manager; per=200; else scope=TRUE; per=500; fi
  for page in 1 100 1000; do
    off=$(( (page - 1) * per ))
    run "$who per_page=$per page $page, OFFSET $off" "SELECT \"s\".* FROM services AS s WHERE ($scope) ORDER BY \"s\".\"service_id\" ASC LIMIT $((per + 1)) OFFSET $off"
    if [ $page = 1 ]; then cur=0; else
      cur=$(psql "$DB" -Atqc "SELECT service_id FROM services AS s WHERE ($scope) ORDER BY service_id LIMIT 1 OFFSET $((off - 1))"); fi
    run "$who per_page=$per page $page, after service_id $cur" "SELECT \"s\".* FROM services AS s WHERE ($scope) AND \"s\".\"service_id\" > $cur ORDER BY \"s\".\"service_id\" ASC LIMIT $((per + 1))"
  done
done
# The same by name (admin; the index services_name_account_id_idx is on (name, account_id), not (name, service_id)).
for page in 1 100 1000; do
  off=$(( (page - 1) * 500 ))
  run "admin sort=name page $page, OFFSET $off" "SELECT \"s\".* FROM services AS s WHERE (TRUE) ORDER BY \"s\".\"name\" ASC, \"s\".\"service_id\" ASC LIMIT 501 OFFSET $off"
  if [ $page = 1 ]; then
    run "admin sort=name page $page, first page" "SELECT \"s\".* FROM services AS s WHERE (TRUE) ORDER BY \"s\".\"name\" ASC, \"s\".\"service_id\" ASC LIMIT 501"
  else
    row=$(psql "$DB" -Atqc "SELECT quote_literal(name) || ', ' || service_id FROM services AS s ORDER BY name, service_id LIMIT 1 OFFSET $((off - 1))")
    run "admin sort=name page $page, after ($row)" "SELECT \"s\".* FROM services AS s WHERE (TRUE) AND (\"s\".\"name\", \"s\".\"service_id\") > ($row) ORDER BY \"s\".\"name\" ASC, \"s\".\"service_id\" ASC LIMIT 501"
  fi
done
# WALK=1: the whole export of manager 2 by keyset, 500 a page, in one DO block
# (per page the page statement and the next cursor's statement); prints the time.
if [ "${WALK:-0}" = 1 ]; then
  psql "$DB" -qc '\timing on' -c "SET max_parallel_workers_per_gather = 0" -c "
DO \$\$
DECLARE cur bigint := 0; n int; total bigint := 0; pages int := 0; last bigint;
BEGIN
  LOOP
    SELECT count(*), max(service_id) INTO n, last FROM (
      SELECT s.* FROM services AS s WHERE $scope_manager AND s.service_id > cur
      ORDER BY s.service_id LIMIT 501) AS p;
    pages := pages + 1;
    total := total + least(n, 500);
    EXIT WHEN n <= 500;
    SELECT max(service_id) INTO cur FROM (
      SELECT s.service_id FROM services AS s WHERE $scope_manager AND s.service_id > cur
      ORDER BY s.service_id LIMIT 500) AS q;
  END LOOP;
  RAISE NOTICE 'keyset walk: % pages, % rows', pages, total;
END \$\$;"
fi
