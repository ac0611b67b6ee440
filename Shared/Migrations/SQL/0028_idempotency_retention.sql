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

-- Daily partitions of `parent` (as bk_retention_create_weeks makes weekly ones), from the end of
-- its newest partition up to `days_ahead` days past the day after `at`.
CREATE FUNCTION bk_retention_create_days(parent text, days_ahead integer, at timestamptz DEFAULT now())
RETURNS SETOF text LANGUAGE plpgsql AS $fn$
DECLARE
    first  timestamptz := (date_trunc('day', at AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC';
    upto   timestamptz := first + make_interval(days => days_ahead);
    start  timestamptz;
    part   text;
BEGIN
    SELECT max(b.upper_bound) INTO start FROM bk_retention_partitions(parent) b;
    IF start IS NULL OR start = 'infinity' THEN
        start := first;
    END IF;
    WHILE start < upto LOOP
        part := parent || '_p' || to_char(start AT TIME ZONE 'UTC', 'YYYYMMDD');
        IF to_regclass(quote_ident(current_schema()) || '.' || quote_ident(part)) IS NULL THEN
            BEGIN
                EXECUTE format('CREATE TABLE %I.%I (LIKE %I.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                               current_schema(), part, current_schema(), parent);
                EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)',
                               current_schema(), parent, current_schema(), part, start, start + interval '1 day');
                RETURN NEXT 'created ' || part;
            EXCEPTION WHEN others THEN
                RETURN NEXT 'skipped ' || part || ': ' || SQLERRM;
            END;
        END IF;
        start := start + interval '1 day';
    END LOOP;
    RETURN;
END
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
