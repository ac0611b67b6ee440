-- What each retention owner found on its last pass (issue 30; docs/data-lifecycle.md, "What an
-- operator sees"), for the gateway's GET /v1/retention and the dashboard: the owners (workflow,
-- webhooks, ingest) hold their settings and run the passes; the gateway knows neither. One row per
-- table, replaced by every pass that ran (a replica that did not get the pass's lock writes nothing).
CREATE TABLE retention_status (
    table_name        text PRIMARY KEY,
    retention_seconds bigint NOT NULL CHECK (retention_seconds >= 0),
    -- The oldest data there can be: the lower bound of the oldest partition kept (the legacy
    -- partition's oldest row); NULL when the table holds no partition with data.
    oldest_kept       timestamptz,
    partitions        integer NOT NULL,
    partitions_ahead  integer NOT NULL,
    -- Partitions past their time kept because they hold something still in use (live runs).
    partitions_kept   integer NOT NULL DEFAULT 0,
    dropped_last_pass integer NOT NULL DEFAULT 0,
    checked_at        timestamptz NOT NULL DEFAULT now()
);
