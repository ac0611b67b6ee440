-- Retention of the ledger (issue 30; docs/data-lifecycle.md, "Retention"): messages, deliveries
-- and delivery_payloads become RANGE-partitioned by `message_time`, one partition per UTC week
-- (<table>_pYYYYMMDD, the Monday), the same weeks in all three, with no default partition.
-- apns-sender's `ledger.retention` loop creates weeks ahead and drops a week of all three at once
-- once it is past BUZZKIT_LEDGER_RETENTION_DAYS and holds nothing still in use.
--
-- `message_time` is the message's place in time, and a delivery or stored request carries its
-- message's, so a message and everything under it leave in the same week's drop:
-- * a message with a time-ordered id (UUID version 7: every id the gateway and the liveactivity
--   service make from now on, and a workflow send's id when its run's id is one) has the time in
--   its id (`bk_uuid7_time`), so a statement that knows the id prunes to one week without a
--   lookup: `message_time = bk_uuid7_time(id)`. A workflow send's message is filed under its
--   run's start (the time in the run's id: the send's id stays name-based on run, step and
--   purpose, so a step done again names the same row);
-- * a message with another id (a Live Activity send named by its Idempotency-Key, a send of a run
--   started before this migration) has the time it was written;
-- * rows written before this migration have `-infinity` and live in the legacy partition.
--
-- Existing rows are not copied: each old table becomes its parent's partition `<table>_legacy`
-- for everything before the coming Monday (as workflow_runs did in 0024). The cost is one pass per
-- table for the range CHECK and one index build for the new primary key (id, message_time), under
-- this migration's lock. The column is added with a constant default (no rewrite).
--
-- What changes for the statements on the ledger: the primary keys are (id, message_time) (a
-- unique index of a partitioned table must hold the partition key; as message_time is a function
-- of the message, (id, message_time) is as unique as id was); ON CONFLICT names both columns. A
-- lookup by a message id confines message_time to the time in the id, or to everything when the
-- id has none (Shared/Ledger's `LedgerTime`): one week's index, or each week's.

-- The time in a version 7 UUID (its first 48 bits, milliseconds since 1970); NULL for any other id.
CREATE FUNCTION bk_uuid7_time(id uuid) RETURNS timestamptz
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    -- One expression with no FROM, so the planner inlines it (a per-row call costs no function call).
    SELECT CASE WHEN substr(id::text, 15, 1) = '7'
                THEN to_timestamp(('x' || substr(id::text, 1, 8) || substr(id::text, 10, 4))::bit(48)::bigint / 1000.0) END
$$;

-- Reads behind functions for statements that run per chunk (Shared/Ledger's record statement,
-- MessageCompletion): a subquery over a partitioned table is planned and set up over every week
-- each time such a statement runs, though these run only for a message whose id has no time, or
-- for a message that completes while an endpoint wants `message.completed`. PL/pgSQL keeps their
-- own plans, pruned to the week as they start.
CREATE FUNCTION bk_message_time(message uuid) RETURNS timestamptz
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT m.message_time FROM messages m WHERE m.id = message LIMIT 1);
END
$$;
CREATE FUNCTION bk_delivery_statuses(message uuid, week timestamptz) RETURNS SETOF text
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY SELECT d.status FROM deliveries d WHERE d.message_id = message AND d.message_time = week;
END
$$;
CREATE FUNCTION bk_delivery_exists(delivery uuid, week timestamptz) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM deliveries d WHERE d.id = delivery AND d.message_time = week);
END
$$;

DROP VIEW delivery_attempts;

DO $$
DECLARE
    t text;
    idx record;
BEGIN
    FOREACH t IN ARRAY ARRAY['messages', 'deliveries', 'delivery_payloads'] LOOP
        EXECUTE format('ALTER TABLE %I ADD COLUMN message_time timestamptz NOT NULL DEFAULT %L', t, '-infinity');
        EXECUTE format('ALTER TABLE %I ALTER COLUMN message_time DROP DEFAULT', t);
        EXECUTE format('ALTER TABLE %I RENAME TO %I', t, t || '_legacy');
        FOR idx IN SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = t || '_legacy' LOOP
            EXECUTE format('ALTER INDEX %I RENAME TO %I', idx.indexname,
                           t || '_legacy' || substr(idx.indexname, length(t) + 1));
        END LOOP;
    END LOOP;
END
$$;

CREATE TABLE messages (
    LIKE messages_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    PRIMARY KEY (id, message_time),
    FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE
) PARTITION BY RANGE (message_time);
CREATE INDEX messages_unfinished ON messages (updated_at) WHERE status IN ('queued', 'fanning_out');
CREATE INDEX messages_tenant_recent ON messages (tenant_id, created_at, id);
CREATE INDEX messages_fanned_out ON messages (updated_at) WHERE status = 'fanned_out';

CREATE TABLE deliveries (
    LIKE deliveries_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    PRIMARY KEY (id, message_time)
) PARTITION BY RANGE (message_time);
CREATE INDEX deliveries_message_id ON deliveries (message_id, id);

CREATE TABLE delivery_payloads (
    LIKE delivery_payloads_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    PRIMARY KEY (id, message_time)
) PARTITION BY RANGE (message_time);

DO $$
DECLARE
    bound timestamptz := bk_next_week_start(now());
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['messages', 'deliveries', 'delivery_payloads'] LOOP
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (message_time IS NOT NULL AND message_time < %L)',
                       t || '_legacy', t || '_legacy_range', bound);
        EXECUTE format('CREATE UNIQUE INDEX %I ON %I (id, message_time)', t || '_legacy_id_time', t || '_legacy');
        -- The old single-column primary key becomes the new one, (id, message_time).
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t || '_legacy', t || '_legacy_pkey');
        EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY USING INDEX %I',
                       t || '_legacy', t || '_legacy_pkey', t || '_legacy_id_time');
        EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (%L)', t, t || '_legacy', bound);
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t || '_legacy', t || '_legacy_range');
    END LOOP;
END
$$;

-- Every attempt of a delivery, as sent and as answered (migration 0018's view, on the new tables:
-- a delivery's stored requests are its message's, in its week).
CREATE VIEW delivery_attempts AS
SELECT delivery_id, attempt, payload, headers, status, reason, apns_id, latency_ms, error, at
FROM delivery_attempt_rows
UNION ALL
SELECT d.id, (a ->> 'n')::int, p.payload,
       replace(p.headers::text, '{apns-id}', coalesce(d.apns_id, d.id)::text)::json,
       (a ->> 's')::int, a ->> 'r',
       CASE WHEN a::jsonb ? 'a' THEN a ->> 'a' ELSE coalesce(d.apns_id, d.id)::text END,
       (a ->> 'l')::int, a ->> 'e',
       coalesce(to_timestamp((a ->> 't')::bigint / 1000.0), d.created_at)
FROM deliveries d
CROSS JOIN LATERAL json_array_elements(d.attempts) AS a
JOIN delivery_payloads p ON p.id = coalesce((a ->> 'p')::uuid, d.payload_id) AND p.message_time = d.message_time
WHERE d.attempts IS NOT NULL;

SELECT bk_retention_create_weeks('messages', 4);
SELECT bk_retention_create_weeks('deliveries', 4);
SELECT bk_retention_create_weeks('delivery_payloads', 4);
