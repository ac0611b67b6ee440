-- Erasure of a subscriber (issue 30): `DELETE /v1/subscribers/{id}` removes the person everywhere
-- and keeps this record for the audit. The record also drives the work: the request does what it
-- can within its time budget, then the gateway's erasure loop (any replica, a lease so only one
-- works on it at a time) finishes it, also after a crash part-way, since every step is an
-- idempotent batch that commits with its counts.
--
-- While `running`, the record holds what is being erased (the subscriber id, its anonymous ids,
-- its device and Live Activity tokens), needed to find the rows once the subscriber row is gone;
-- `completed` clears them, so what stays names the person only by `subject_hash` (HMAC-SHA-256 of
-- tenant id and subscriber id under BUZZKIT_SECRET_KEY: a later request about the same person can
-- be matched, the id cannot be read back).
CREATE TABLE erasures (
    id             uuid PRIMARY KEY,
    tenant_id      uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    subject_hash   text NOT NULL,
    -- The API key that asked (no foreign key: the audit outlives a revoked or deleted key).
    api_key_id     uuid,
    status         text NOT NULL DEFAULT 'running' CHECK (status IN ('running', 'completed')),
    subject_ids    text[],
    tokens         text[],
    -- The step under way (ErasureStep raw values) and the ledger walk's position in it.
    step           text NOT NULL,
    cursor_at      timestamptz,
    cursor_id      uuid,
    -- What was removed or anonymised so far, by kind: committed with each batch.
    counts         jsonb NOT NULL DEFAULT '{}',
    lease_until    timestamptz,
    leased_by      text,
    -- When the person's running workflow runs were asked to cancel (they are deleted once
    -- cancelled, or after BUZZKIT_ERASURE_RUN_CANCEL_WAIT).
    cancel_requested_at timestamptz,
    requested_at   timestamptz NOT NULL DEFAULT now(),
    completed_at   timestamptz,
    CHECK ((status = 'completed') = (subject_ids IS NULL AND tokens IS NULL AND completed_at IS NOT NULL))
);
CREATE INDEX erasures_running ON erasures (requested_at) WHERE status = 'running';
CREATE INDEX erasures_subject ON erasures (tenant_id, subject_hash, requested_at DESC);

-- `doc` (JSON text) with every JSON string equal to one of `needles` replaced by "" (a subscriber
-- id or device token as a whole value: `"to": ["alice"]`, `"subscriberId": "alice"`). Keys equal
-- to a needle are replaced too. Used on the ledger's JSON and on webhook events' data.
CREATE FUNCTION bk_erase_strings(doc text, needles text[]) RETURNS text
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    needle text;
BEGIN
    IF doc IS NULL THEN
        RETURN NULL;
    END IF;
    FOREACH needle IN ARRAY coalesce(needles, '{}') LOOP
        doc := replace(doc, to_json(needle)::text, '""');
    END LOOP;
    RETURN doc;
END $$;

-- Whether `doc` holds one of `needles` anywhere (the rows bk_erase_strings is worth running on).
CREATE FUNCTION bk_mentions(doc text, needles text[]) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT EXISTS (SELECT 1 FROM unnest(needles) AS n WHERE n <> '' AND position(n IN doc) > 0)
$$;
