-- Idempotency records leave by the day (issue 30; docs/data-lifecycle.md, "Retention"). A record is
-- replayed for 24 hours and was then deleted only when its key came again: the table grew with
-- every key ever used. idempotency_records becomes RANGE-partitioned by created_at, one partition
-- per UTC day (idempotency_records_pYYYYMMDD), made a week ahead; the gateway's
-- `idempotency.retention` loop drops a day once all of it is past the 24 hours.
--
-- "One record per (scope, key)" can no longer be a unique index (it would have to hold
-- created_at); the gateway's claim takes a transaction-scoped advisory lock on the key, then looks
-- for a record of the last 24 hours (two days' partitions at most) before inserting one. The
-- primary key is (scope, idempotency_key, created_at). Existing rows are not copied: the old table
-- becomes the partition idempotency_records_legacy (everything before tomorrow), dropped once a day
-- has passed.

-- Range partitions of `parent` (a table of the current schema partitioned by RANGE on a
-- timestamptz), each `step` long and named by its start (`<parent>_pYYYYMMDD`): from the end of its
-- newest partition (or `first` when it has none but a legacy one) up to `upto`. Returns one line per
-- partition created. Safe to run from several sessions (a concurrent creation is reported as
-- skipped). The one loop behind the weekly partitions (bk_retention_create_weeks, migration 0024,
-- now a call of this) and the daily ones.
CREATE FUNCTION bk_retention_create_partitions(parent text, step interval, first timestamptz, upto timestamptz)
RETURNS SETOF text LANGUAGE plpgsql AS $fn$
DECLARE
    start  timestamptz;
    part   text;
BEGIN
    SELECT max(b.upper_bound) INTO start FROM bk_retention_partitions(parent) b;
    IF start IS NULL OR start = 'infinity' THEN
        start := first;
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
                               current_schema(), parent, current_schema(), part, start, start + step);
                RETURN NEXT 'created ' || part;
            EXCEPTION WHEN others THEN
                RETURN NEXT 'skipped ' || part || ': ' || SQLERRM;
            END;
        END IF;
        start := start + step;
    END LOOP;
    RETURN;
END
$fn$;

-- Weekly partitions up to `weeks_ahead` weeks past the week after `at` (as migration 0024 made them).
CREATE OR REPLACE FUNCTION bk_retention_create_weeks(parent text, weeks_ahead integer, at timestamptz DEFAULT now())
RETURNS SETOF text LANGUAGE sql AS $fn$
    SELECT bk_retention_create_partitions(parent, interval '1 week', bk_next_week_start(at),
                                          bk_next_week_start(at) + make_interval(weeks => weeks_ahead))
$fn$;

-- Daily partitions up to `days_ahead` days past the day after `at`.
CREATE FUNCTION bk_retention_create_days(parent text, days_ahead integer, at timestamptz DEFAULT now())
RETURNS SETOF text LANGUAGE sql AS $fn$
    SELECT bk_retention_create_partitions(parent, interval '1 day', d, d + make_interval(days => days_ahead))
    FROM (SELECT (date_trunc('day', at AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC' AS d) AS x
$fn$;

ALTER TABLE idempotency_records RENAME TO idempotency_records_legacy;
ALTER INDEX idempotency_records_pkey RENAME TO idempotency_records_legacy_pkey;
DROP INDEX idempotency_records_expiry;

CREATE TABLE idempotency_records (
    LIKE idempotency_records_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    PRIMARY KEY (scope, idempotency_key, created_at)
) PARTITION BY RANGE (created_at);

DO $$
DECLARE
    bound timestamptz := (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC';
BEGIN
    EXECUTE format('ALTER TABLE idempotency_records_legacy ADD CONSTRAINT idempotency_records_legacy_range CHECK (created_at IS NOT NULL AND created_at < %L)', bound);
    CREATE UNIQUE INDEX idempotency_records_legacy_key_created ON idempotency_records_legacy (scope, idempotency_key, created_at);
    ALTER TABLE idempotency_records_legacy DROP CONSTRAINT idempotency_records_legacy_pkey;
    ALTER TABLE idempotency_records_legacy ADD CONSTRAINT idempotency_records_legacy_pkey
        PRIMARY KEY USING INDEX idempotency_records_legacy_key_created;
    EXECUTE format('ALTER TABLE idempotency_records ATTACH PARTITION idempotency_records_legacy FOR VALUES FROM (MINVALUE) TO (%L)', bound);
END
$$;
ALTER TABLE idempotency_records_legacy DROP CONSTRAINT idempotency_records_legacy_range;

SELECT bk_retention_create_days('idempotency_records', 7);
