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

-- `doc` with every string equal to one of `needles` under a key of `keys` (the value itself, or an
-- element of the array it holds) replaced by '(erased)', at any depth: `{"to": ["alice"]}`,
-- `{"subscriberId": "alice"}`. Only under those keys: a subscriber named "default" leaves a
-- `"sound": "default"` alone. Used on messages' targets and webhook events' data.
CREATE FUNCTION bk_erase_keys(doc jsonb, keys text[], needles text[]) RETURNS jsonb
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF jsonb_typeof(doc) = 'object' THEN
        RETURN (SELECT coalesce(jsonb_object_agg(k, CASE
                    WHEN k = ANY (keys) AND jsonb_typeof(v) = 'string' AND v #>> '{}' = ANY (needles)
                        THEN to_jsonb('(erased)'::text)
                    WHEN k = ANY (keys) AND jsonb_typeof(v) = 'array'
                        THEN (SELECT coalesce(jsonb_agg(CASE WHEN jsonb_typeof(e) = 'string' AND e #>> '{}' = ANY (needles)
                                                             THEN to_jsonb('(erased)'::text)
                                                             ELSE bk_erase_keys(e, keys, needles) END ORDER BY i), '[]')
                              FROM jsonb_array_elements(v) WITH ORDINALITY AS a(e, i))
                    ELSE bk_erase_keys(v, keys, needles) END), '{}'::jsonb)
                FROM jsonb_each(doc) AS o(k, v));
    ELSIF jsonb_typeof(doc) = 'array' THEN
        RETURN (SELECT coalesce(jsonb_agg(bk_erase_keys(e, keys, needles) ORDER BY i), '[]')
                FROM jsonb_array_elements(doc) WITH ORDINALITY AS a(e, i));
    END IF;
    RETURN doc;
END $$;

-- Whether `doc` holds one of `needles` anywhere (a cheap filter before bk_erase_keys).
CREATE FUNCTION bk_mentions(doc text, needles text[]) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT EXISTS (SELECT 1 FROM unnest(needles) AS n WHERE n <> '' AND position(n IN doc) > 0)
$$;
