-- Baseline: BuzzKit needs PostgreSQL 13 or newer (gen_random_uuid() is built in from 13 on, so
-- no extension is needed; CREATE EXTENSION would also race when several schemas migrate at once).
DO $$
BEGIN
    IF current_setting('server_version_num')::int < 130000 THEN
        RAISE EXCEPTION 'BuzzKit needs PostgreSQL 13 or newer, this server is %', current_setting('server_version');
    END IF;
END
$$;
