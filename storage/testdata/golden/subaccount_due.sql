-- subaccount (account 7, manager 3), GET /services/due on 2026-01-15
SELECT "s"."service_id", "s"."account_id", "s"."imei", "s"."name", "s"."odo", "s"."odo_interval", "s"."odo_last", "s"."engh", "s"."engh_interval", "s"."engh_last", "s"."days", "s"."days_interval", "s"."days_last", "s"."odo_left", "s"."odo_left_num", "s"."engh_left", "s"."engh_left_num", "s"."days_left", "s"."days_left_num", "s"."update_last", "s"."notify_service_expire", "s"."extra", "o"."name" AS object_name, "rem".odo_remaining, "rem".engh_remaining, "rem".days_remaining, "d".due, CASE WHEN "rem".odo_remaining <= 0 OR "rem".engh_remaining <= 0 OR "rem".days_remaining <= 0
	THEN 'expired' ELSE 'soon' END AS state FROM "services" AS "s" JOIN "objects" AS "o" ON "o"."imei" = "s"."imei" CROSS JOIN LATERAL (SELECT
	CASE WHEN "s"."odo" THEN "s"."odo_interval" - ("o"."odometer" - "s"."odo_last") END AS odo_remaining,
	CASE WHEN "s"."engh" THEN "s"."engh_interval" - ("o"."engine_hours" - "s"."engh_last") END AS engh_remaining,
	CASE WHEN "s"."days" AND "s"."days_last" IS NOT NULL
		THEN "s"."days_interval" - ('2026-01-15'::date - "s"."days_last")::bigint END AS days_remaining
) AS "rem" CROSS JOIN LATERAL (SELECT array_remove(ARRAY[
	CASE WHEN "rem".odo_remaining <= 0 OR ("s"."odo_left" AND "rem".odo_remaining <= "s"."odo_left_num") THEN 'odo' END,
	CASE WHEN "rem".engh_remaining <= 0 OR ("s"."engh_left" AND "rem".engh_remaining <= "s"."engh_left_num") THEN 'engh' END,
	CASE WHEN "rem".days_remaining <= 0 OR ("s"."days_left" AND "rem".days_remaining <= "s"."days_left_num") THEN 'days' END
]::text[], NULL) AS due) AS "d" WHERE ("s"."service_id" IN (SELECT "s"."service_id" FROM "services" AS "s" WHERE (("s"."account_id" = 3 AND EXISTS (SELECT 1 FROM "object_grants" AS "grant" WHERE "grant"."subaccount_id" = 7 AND "grant"."imei" = "s"."imei"))) AND ("s"."due_from" <= ('2026-01-15'::date - DATE '2000-01-01')::bigint) ORDER BY "s"."service_id" DESC LIMIT 500)) AND (cardinality("d".due) > 0) ORDER BY "s"."service_id" DESC
