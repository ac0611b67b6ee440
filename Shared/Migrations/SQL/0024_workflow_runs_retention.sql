-- Retention of workflow runs (issue 30; docs/data-lifecycle.md, "Retention"). workflow_runs becomes
-- RANGE-partitioned by created_at, one partition per UTC week (workflow_runs_pYYYYMMDD, the
-- Monday), with no default partition (DETACH PARTITION ... CONCURRENTLY refuses one). The workflow
-- service's `workflow.retention` loop creates weeks ahead and drops weeks past
-- BUZZKIT_RUN_RETENTION_DAYS that hold no live run and no run ended within the retention.
--
-- Existing rows are not copied: the old table becomes the partition workflow_runs_legacy, of
-- everything created before the coming Monday. Its cost is one pass for the range CHECK (so ATTACH
-- need not scan again), one index build for the new primary key (id, created_at) and one copy of
-- the trigger keys, all under this migration's lock on workflow_runs. The indexes of the old table
-- match the new parent's and are attached, not rebuilt.
--
-- What changes for the statements on runs:
-- * The primary key is (id, created_at): a unique index of a partitioned table must hold the
--   partition key. An id stays unique (a fresh UUID); a lookup by id probes each partition's
--   primary-key index (5 to 6 weeks at the default retention, plus the legacy partition).
-- * "One run per (workflow, trigger)" moves to workflow_run_triggers, a plain table keyed by it,
--   written in the same statement as the run (as event_ids is for events). Its rows of a week
--   are deleted just before the week is dropped.
-- * workflow_run_inputs loses its foreign key to runs (a key into a partitioned table would make
--   every drop check it under lock). Statements that delete runs delete their inputs; the loop
--   removes inputs whose run is gone (a deleted tenant's).

ALTER TABLE workflow_run_inputs DROP CONSTRAINT IF EXISTS workflow_run_inputs_run_id_fkey;

ALTER TABLE workflow_runs RENAME TO workflow_runs_legacy;
ALTER INDEX workflow_runs_pkey RENAME TO workflow_runs_legacy_pkey;
ALTER INDEX workflow_runs_wake RENAME TO workflow_runs_legacy_wake;
ALTER INDEX workflow_runs_list RENAME TO workflow_runs_legacy_list;
ALTER INDEX workflow_runs_list_subscriber RENAME TO workflow_runs_legacy_list_subscriber;
ALTER INDEX workflow_runs_live RENAME TO workflow_runs_legacy_live;
ALTER INDEX workflow_runs_live_workflow RENAME TO workflow_runs_legacy_live_workflow;

CREATE TABLE workflow_runs (
    LIKE workflow_runs_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    PRIMARY KEY (id, created_at),
    FOREIGN KEY (tenant_id) REFERENCES tenants(id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, workflow_key, version) REFERENCES workflow_versions (tenant_id, workflow_key, version)
) PARTITION BY RANGE (created_at);
CREATE INDEX workflow_runs_wake ON workflow_runs (wake_at) WHERE wake_at IS NOT NULL;
CREATE INDEX workflow_runs_list ON workflow_runs (tenant_id, workflow_key, created_at DESC, id DESC);
CREATE INDEX workflow_runs_list_subscriber ON workflow_runs (tenant_id, workflow_key, subscriber_id, created_at DESC, id DESC);
CREATE INDEX workflow_runs_live ON workflow_runs (tenant_id, subscriber_id) WHERE status IN ('pending', 'running');
CREATE INDEX workflow_runs_live_workflow ON workflow_runs (workflow_key, tenant_id) WHERE status IN ('pending', 'running');

-- One run per (workflow, trigger), whatever its week.
CREATE TABLE workflow_run_triggers (
    tenant_id     uuid NOT NULL,
    workflow_key  text COLLATE "C" NOT NULL,
    trigger_key   text COLLATE "C" NOT NULL,
    run_id        uuid NOT NULL,
    PRIMARY KEY (tenant_id, workflow_key, trigger_key)
);
INSERT INTO workflow_run_triggers (tenant_id, workflow_key, trigger_key, run_id)
SELECT tenant_id, workflow_key, trigger_key, id FROM workflow_runs_legacy;
-- The legacy partition's own unique key is kept (its writes end with its week); the new weeks have none.

-- The coming Monday, 00:00 UTC: the legacy partition ends there, the weekly ones start there.
CREATE FUNCTION bk_next_week_start(at timestamptz) RETURNS timestamptz LANGUAGE sql IMMUTABLE AS $$
    SELECT (date_trunc('week', at AT TIME ZONE 'UTC') + interval '1 week') AT TIME ZONE 'UTC'
$$;

DO $$
DECLARE
    bound timestamptz := bk_next_week_start(now());
BEGIN
    EXECUTE format('ALTER TABLE workflow_runs_legacy ADD CONSTRAINT workflow_runs_legacy_range CHECK (created_at IS NOT NULL AND created_at < %L)', bound);
    CREATE UNIQUE INDEX workflow_runs_legacy_id_created ON workflow_runs_legacy (id, created_at);
    -- The old single-column primary key becomes the new one, (id, created_at).
    ALTER TABLE workflow_runs_legacy DROP CONSTRAINT workflow_runs_legacy_pkey;
    ALTER TABLE workflow_runs_legacy ADD CONSTRAINT workflow_runs_legacy_pkey PRIMARY KEY USING INDEX workflow_runs_legacy_id_created;
    EXECUTE format('ALTER TABLE workflow_runs ATTACH PARTITION workflow_runs_legacy FOR VALUES FROM (MINVALUE) TO (%L)', bound);
END
$$;
ALTER TABLE workflow_runs_legacy DROP CONSTRAINT workflow_runs_legacy_range;

-- Weekly partitions of `parent` (a table of the current schema partitioned by RANGE on a
-- timestamptz), from the end of its newest partition up to `weeks_ahead` weeks past the week after
-- `at`. Returns one line per partition created. Safe to run from several sessions (a concurrent
-- creation of the same week is reported as skipped).
CREATE FUNCTION bk_retention_create_weeks(parent text, weeks_ahead integer, at timestamptz DEFAULT now())
RETURNS SETOF text LANGUAGE plpgsql AS $fn$
DECLARE
    upto   timestamptz := bk_next_week_start(at) + make_interval(weeks => weeks_ahead);
    start  timestamptz;
    part   text;
BEGIN
    SELECT max(b.upper_bound) INTO start FROM bk_retention_partitions(parent) b;
    IF start IS NULL OR start = 'infinity' THEN
        start := bk_next_week_start(at);
    END IF;
    WHILE start < upto LOOP
        part := parent || '_p' || to_char(start AT TIME ZONE 'UTC', 'YYYYMMDD');
        -- CREATE TABLE ... PARTITION OF would lock the parent ACCESS EXCLUSIVE (every writer waits);
        -- ATTACH PARTITION takes SHARE UPDATE EXCLUSIVE, which inserts and updates do not conflict with.
        IF to_regclass(quote_ident(current_schema()) || '.' || quote_ident(part)) IS NULL THEN
            BEGIN
                EXECUTE format('CREATE TABLE %I.%I (LIKE %I.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                               current_schema(), part, current_schema(), parent);
                EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',
                               current_schema(), parent, current_schema(), part, start, start + interval '1 week');
                RETURN NEXT 'created ' || part;
            EXCEPTION WHEN others THEN
                RETURN NEXT 'skipped ' || part || ': ' || SQLERRM;
            END;
        END IF;
        start := start + interval '1 week';
    END LOOP;
    RETURN;
END
$fn$;

-- The partitions of `parent` (current schema) with their bounds (lower NULL: MINVALUE) and
-- whether a DETACH ... CONCURRENTLY of it was interrupted (detach_pending), oldest first.
CREATE FUNCTION bk_retention_partitions(parent text)
RETURNS TABLE (part text, lower_bound timestamptz, upper_bound timestamptz, detach_pending boolean)
LANGUAGE plpgsql STABLE AS $fn$
DECLARE
    r record;
    m text[];
BEGIN
    FOR r IN
        SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) AS bound, i.inhdetachpending
        FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        JOIN pg_class p ON p.oid = i.inhparent
        JOIN pg_namespace n ON n.oid = p.relnamespace
        WHERE p.relname = parent AND n.nspname = current_schema()
    LOOP
        m := regexp_match(r.bound, 'FROM \((.*)\) TO \((.*)\)');
        part := r.relname;
        lower_bound := CASE WHEN m[1] = 'MINVALUE' THEN NULL ELSE trim(both '''' from m[1])::timestamptz END;
        upper_bound := CASE WHEN m[2] = 'MAXVALUE' THEN 'infinity' ELSE trim(both '''' from m[2])::timestamptz END;
        detach_pending := r.inhdetachpending;
        RETURN NEXT;
    END LOOP;
    RETURN;
END
$fn$;

-- The due runs for a run worker's claim, oldest wake first. A function only to plan the claim with
-- sorts off: over the partitions, a planner whose statistics are behind (a burst of runs inserted
-- and not analyzed yet) sorts every due row of every partition, then locks the first n, instead of
-- merging the partitions' wake indexes and stopping at n. bench/workflows.sh sends, 100,000 runs
-- due at once: 222 ms per claim of 100 with the sort, Postgres 1,200 us per workflow send instead of
-- about 300.
CREATE FUNCTION bk_workflow_runs_due(due_at timestamptz, n integer) RETURNS SETOF workflow_runs
LANGUAGE sql VOLATILE SET enable_sort = off AS $$
    SELECT * FROM workflow_runs WHERE wake_at <= due_at ORDER BY wake_at LIMIT n FOR UPDATE SKIP LOCKED
$$;

SELECT bk_retention_create_weeks('workflow_runs', 4);
