-- Events (issue 5): the tenant's event stream, deduplicated by (tenant, client event id), and the
-- per-message receipt counters fed by $notification.delivered/opened/dismissed. Written by the
-- ingest service only.
--
-- Layout for volume:
-- * events is RANGE-partitioned by occurred_at, one partition per UTC month (events_pYYYYMM), plus
--   a DEFAULT partition catching timestamps older than every partition (never newer: the API
--   refuses timestamps more than a day ahead and partitions exist months ahead).
--   bk_events_maintain(retention_days, months_ahead) creates the coming months' partitions and
--   drops whole months older than the retention; the ingest service runs it at start and daily.
-- * A unique index on a partitioned table must contain the partition key, so (tenant_id, event_id)
--   cannot be unique on events itself. Dedupe lives in event_ids, a plain table keyed by
--   (tenant_id, event_id): strict "stored once" whatever timestamp a retry carries. A dropped
--   partition takes its event_ids rows with it, so the id table never outgrows the retention.
-- * Subscribers' reads ("did X within N days", "count of X", the event stream) use
--   (tenant_id, subscriber_id, name, occurred_at) and (tenant_id, subscriber_id, occurred_at, event_id).
--
-- Anonymous ids: subscriber_id is the subscriber the event belongs to when it was stored: the
-- subscriber id sent, or for an anonymousId the subscriber it is aliased to (subscriber_aliases),
-- or the anonymous id itself while it is not aliased yet (an anonymous installation is a subscriber
-- whose id is its anonymous id). Reads for subscriber S therefore take S plus every anonymous id
-- aliased to S, so events before and after identify are all S's; anonymous_id keeps provenance.
CREATE TABLE events (
    tenant_id      uuid NOT NULL,
    event_id       text NOT NULL,
    name           text NOT NULL,
    subscriber_id  text NOT NULL,
    anonymous_id   text,
    data           jsonb NOT NULL DEFAULT '{}'::jsonb,
    occurred_at    timestamptz NOT NULL,
    received_at    timestamptz NOT NULL DEFAULT now()
) PARTITION BY RANGE (occurred_at);

CREATE INDEX events_subscriber_name ON events (tenant_id, subscriber_id, name, occurred_at);
CREATE INDEX events_subscriber_time ON events (tenant_id, subscriber_id, occurred_at, event_id);

CREATE TABLE events_default PARTITION OF events DEFAULT;

-- Every stored event id. entry_id is the bk:ingest stream entry that stored it: when that entry is
-- delivered again (the consumer crashed after COMMIT, before XACK), its events are published on
-- bk:events again instead of being mistaken for duplicates of another batch.
CREATE TABLE event_ids (
    tenant_id  uuid NOT NULL,
    event_id   text NOT NULL,
    entry_id   text NOT NULL,
    PRIMARY KEY (tenant_id, event_id)
);

-- One row per (message, receipt kind, subscriber): counts are of distinct subscribers. No foreign
-- key to messages: a receipt may arrive for a message this database does not know (it is stored
-- and counted under that id, harming nothing).
CREATE TABLE message_receipts (
    tenant_id      uuid NOT NULL,
    message_id     text NOT NULL,
    kind           text NOT NULL CHECK (kind IN ('delivered', 'opened', 'dismissed')),
    subscriber_id  text NOT NULL,
    event_id       text NOT NULL,
    occurred_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, message_id, kind, subscriber_id)
);
CREATE INDEX message_receipts_subscriber ON message_receipts (tenant_id, subscriber_id, message_id);

-- The counters GET /v1/messages/{id} reads: incremented by the receipts newly inserted above.
CREATE TABLE message_receipt_counts (
    tenant_id   uuid NOT NULL,
    message_id  text NOT NULL,
    delivered   bigint NOT NULL DEFAULT 0,
    opened      bigint NOT NULL DEFAULT 0,
    dismissed   bigint NOT NULL DEFAULT 0,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, message_id)
);

-- Creates monthly partitions from the retention cutoff's month to months_ahead months after this
-- one, drops the months entirely older than retention_days (with their event_ids rows), and purges
-- the default partition of rows older than the cutoff. Returns one line per action. Safe to run
-- from several replicas at once (transaction-level advisory lock).
CREATE FUNCTION bk_events_maintain(retention_days integer, months_ahead integer DEFAULT 2)
RETURNS SETOF text LANGUAGE plpgsql AS $fn$
DECLARE
    cutoff      timestamptz := now() - make_interval(days => retention_days);
    month_start timestamp   := date_trunc('month', cutoff AT TIME ZONE 'UTC');
    last_month  timestamp   := date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => months_ahead);
    part_name   text;
    part        record;
    upper_bound timestamptz;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('buzzkit.events_maintain:' || current_schema()));
    WHILE month_start <= last_month LOOP
        part_name := 'events_p' || to_char(month_start, 'YYYYMM');
        IF to_regclass(quote_ident(current_schema()) || '.' || part_name) IS NULL THEN
            BEGIN
                EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.events FOR VALUES FROM (%L) TO (%L)',
                               current_schema(), part_name, current_schema(),
                               month_start AT TIME ZONE 'UTC', (month_start + interval '1 month') AT TIME ZONE 'UTC');
                RETURN NEXT 'created ' || part_name;
            EXCEPTION WHEN others THEN
                -- e.g. rows for that month already sit in the default partition (retention raised).
                RETURN NEXT 'skipped ' || part_name || ': ' || SQLERRM;
            END;
        END IF;
        month_start := month_start + interval '1 month';
    END LOOP;

    FOR part IN
        SELECT c.relname FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent
        JOIN pg_namespace n ON n.oid = p.relnamespace
        WHERE p.relname = 'events' AND n.nspname = current_schema() AND c.relname ~ '^events_p[0-9]{6}$'
        ORDER BY c.relname
    LOOP
        upper_bound := (to_date(substr(part.relname, 9), 'YYYYMM')::timestamp + interval '1 month') AT TIME ZONE 'UTC';
        IF upper_bound <= cutoff THEN
            EXECUTE format('DELETE FROM %I.event_ids e USING %I.%I p WHERE e.tenant_id = p.tenant_id AND e.event_id = p.event_id',
                           current_schema(), current_schema(), part.relname);
            EXECUTE format('DROP TABLE %I.%I', current_schema(), part.relname);
            RETURN NEXT 'dropped ' || part.relname;
        END IF;
    END LOOP;

    EXECUTE format('DELETE FROM %I.event_ids e USING %I.events_default d
                    WHERE e.tenant_id = d.tenant_id AND e.event_id = d.event_id AND d.occurred_at < %L',
                   current_schema(), current_schema(), cutoff);
    EXECUTE format('DELETE FROM %I.events_default WHERE occurred_at < %L', current_schema(), cutoff);
    RETURN;
END
$fn$;

SELECT bk_events_maintain(395, 2);
