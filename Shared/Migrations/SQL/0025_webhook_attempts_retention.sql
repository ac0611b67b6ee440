-- Retention of webhook attempts (issue 30; docs/data-lifecycle.md, "Retention"): webhook_attempts
-- becomes RANGE-partitioned by attempted_at, one partition per UTC week, like workflow_runs in
-- 0024 (bk_retention_create_weeks, no default partition). The webhooks service's sweeper drops
-- the weeks wholly older than BUZZKIT_WEBHOOKS_RETENTION (a concurrent detach, then a drop)
-- instead of deleting attempts in batches.
--
-- Existing rows are not copied: the old table becomes the partition webhook_attempts_legacy, of
-- everything before the coming Monday (one pass for the range CHECK, one index build for the new
-- primary key (id, attempted_at), under this migration's lock). The id sequence passes to the
-- new parent, so dropping the legacy partition keeps it. webhook_attempts_time goes: it served
-- only the batched delete.

ALTER TABLE webhook_attempts RENAME TO webhook_attempts_legacy;
ALTER INDEX webhook_attempts_pkey RENAME TO webhook_attempts_legacy_pkey;
ALTER INDEX webhook_attempts_list RENAME TO webhook_attempts_legacy_list;
DROP INDEX webhook_attempts_time;

CREATE TABLE webhook_attempts (
    LIKE webhook_attempts_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    PRIMARY KEY (id, attempted_at),
    FOREIGN KEY (endpoint_id) REFERENCES webhook_endpoints(id) ON DELETE CASCADE
) PARTITION BY RANGE (attempted_at);
ALTER SEQUENCE webhook_attempts_id_seq OWNED BY webhook_attempts.id;
-- GET /v1/webhooks/{id}/attempts: newest first, keyset on id (a merge of the weeks' indexes).
CREATE INDEX webhook_attempts_list ON webhook_attempts (endpoint_id, id DESC);

DO $$
DECLARE
    bound timestamptz := bk_next_week_start(now());
BEGIN
    EXECUTE format('ALTER TABLE webhook_attempts_legacy ADD CONSTRAINT webhook_attempts_legacy_range CHECK (attempted_at < %L)', bound);
    CREATE UNIQUE INDEX webhook_attempts_legacy_id_attempted ON webhook_attempts_legacy (id, attempted_at);
    ALTER TABLE webhook_attempts_legacy DROP CONSTRAINT webhook_attempts_legacy_pkey;
    ALTER TABLE webhook_attempts_legacy ADD CONSTRAINT webhook_attempts_legacy_pkey PRIMARY KEY USING INDEX webhook_attempts_legacy_id_attempted;
    EXECUTE format('ALTER TABLE webhook_attempts ATTACH PARTITION webhook_attempts_legacy FOR VALUES FROM (MINVALUE) TO (%L)', bound);
END
$$;
ALTER TABLE webhook_attempts_legacy DROP CONSTRAINT webhook_attempts_legacy_range;

SELECT bk_retention_create_weeks('webhook_attempts', 4);
