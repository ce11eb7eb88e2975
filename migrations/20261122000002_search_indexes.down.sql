DROP INDEX IF EXISTS services_name_trgm_idx, services_imei_trgm_idx,
    reports_name_trgm_idx, reports_type_trgm_idx,
    events_name_trgm_idx, events_type_trgm_idx,
    reports_account_id_idx, events_account_id_idx;
