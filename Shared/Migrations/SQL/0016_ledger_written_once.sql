-- The ledger, written once per delivery (issue 14's second pass). Before, a push delivery was
-- written four times: inserted `queued` by the fan-out, claimed (`queued -> sending`), ended with
-- its outcome, plus an attempt row carrying its own copy of the payload and headers: about 1.9 kB of
-- WAL and 55-70 us of Postgres CPU per delivery. Now:
--
-- * The CHUNK is the unit of claim. `delivery_chunks` holds what is still to send: up to a chunk's
--   devices (token, subscriber, environment, message per device: a batch of direct messages spans
--   messages), written once by the fan-out (or by the direct-message batch, already claimed), claimed
--   by one replica (`sending_by`, `claimed_at`: one small update per chunk, the arrays stay in TOAST)
--   and deleted in the statement that records its deliveries. A chunk claimed longer than
--   BUZZKIT_SENDER_STALE_SENDING belongs to a replica that stopped: another replica takes it over
--   (`lost_with` says whose answers were lost) and sends it again under the same apns-ids.
-- * A DELIVERY ROW is inserted once, with its outcome: status, attempt count, last answer and every
--   attempt (`attempts`, a compact JSON array: n, status, reason, echoed apns-id when it differs,
--   latency, error, time). Its id is name-based on (message, device token) (`bk_delivery_id`), so a
--   message reaches a device once by the primary key alone (the UNIQUE (message_id, device_token)
--   index is gone), and the id is also the `apns-id` of every push of that delivery (`apns_id` is
--   left NULL: read `coalesce(apns_id, id)`; older rows and Live Activity sends keep their own).
-- * The PAYLOAD is stored once per message (per distinct request): `delivery_payloads` has the exact
--   bytes sent and the request headers with the apns-id as the placeholder `{apns-id}`; a delivery
--   names its payload (`payload_id`). The `delivery_attempts` view shows every attempt as before
--   (payload, headers with the delivery's apns-id, status, reason, apns-id, latency, error, time),
--   from the rows older sends and Live Activity sends wrote (`delivery_attempt_rows`) and from the
--   inline arrays.
-- * Queued and sending deliveries are the devices of pending chunks; the API counts and lists them
--   from there (`delivery_chunks.message_id` for a message's own chunks, the few multi-message ones
--   by their arrays).

CREATE FUNCTION bk_delivery_id(message uuid, token text) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    -- RFC 9562 version 8 (name-based, SHA-256) of "<message>:<token>".
    SELECT (substr(h, 1, 12) || '8' || substr(h, 14, 3)
            || substr('89ab89ab89ab89ab', ('x' || substr(h, 17, 1))::bit(4)::int + 1, 1)
            || substr(h, 18, 15))::uuid
    FROM (SELECT encode(sha256(convert_to(message::text || ':' || token, 'UTF8')), 'hex') AS h) AS x
$$;

CREATE TABLE delivery_chunks (
    id              uuid PRIMARY KEY,
    tenant_id       uuid NOT NULL,
    -- The chunk's message when it has one (a fan-out page's chunk); NULL for a direct batch.
    message_id      uuid,
    -- One element per device, in step.
    message_ids     uuid[] NOT NULL,
    tokens          text[] NOT NULL,
    subscriber_ids  text[] NOT NULL,
    environments    text[] NOT NULL,
    -- The replica sending it; NULL while queued.
    sending_by      text,
    claimed_at      timestamptz,
    -- Set when a replica took the chunk over from one that stopped mid-send: that one's name.
    lost_with       text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- When it was last put on bk:deliveries (an orphan, one whose entry was lost, is put again).
    enqueued_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (cardinality(message_ids) = cardinality(tokens) AND cardinality(tokens) = cardinality(subscriber_ids)
           AND cardinality(tokens) = cardinality(environments))
);
-- The arrays (about 10 kB for 100 devices) always go to TOAST: a claim then rewrites only the
-- small row that points at them.
ALTER TABLE delivery_chunks SET (toast_tuple_target = 128);
CREATE INDEX delivery_chunks_message ON delivery_chunks (message_id);
-- The few chunks of direct batches (several messages each): a message's pending devices among them.
CREATE INDEX delivery_chunks_direct ON delivery_chunks (tenant_id) WHERE message_id IS NULL;
CREATE INDEX delivery_chunks_claimed ON delivery_chunks (claimed_at) WHERE sending_by IS NOT NULL;
CREATE INDEX delivery_chunks_queued ON delivery_chunks (enqueued_at) WHERE sending_by IS NULL;

CREATE TABLE delivery_payloads (
    -- Name-based on the message id, the payload and the headers: the same request, one row.
    id          uuid PRIMARY KEY,
    message_id  uuid NOT NULL,
    payload     text NOT NULL,
    -- The request headers as sent (JWT redacted), apns-id written as {apns-id}.
    headers     json NOT NULL
);

ALTER TABLE deliveries ADD COLUMN payload_id uuid, ADD COLUMN attempts json;
-- Devices written to chunks so far (the audience size once the fan-out ends; `fanout_count` keeps
-- counting what the fan-out read: devices of a topic or list, subscribers of an expression).
ALTER TABLE messages ADD COLUMN fanout_devices integer NOT NULL DEFAULT 0;
ALTER TABLE deliveries DROP CONSTRAINT deliveries_message_id_device_token_key;
-- Push deliveries are no longer updated in place; Live Activity sends still write theirs `sending`
-- and then their outcome: a tenth of each page left free keeps that update heap-only (HOT).
ALTER TABLE deliveries SET (fillfactor = 90);

-- Deliveries a replica had claimed before this migration (a `delivery_claims` row) and those still
-- queued become chunks; their rows go (they are written again, with their outcome, when sent).
-- The chunks are put on bk:deliveries by the orphan sweep (their old stream entries name delivery
-- ids, which the sender now acknowledges without sending).
INSERT INTO delivery_chunks (id, tenant_id, message_id, message_ids, tokens, subscriber_ids, environments, sending_by,
                             claimed_at, lost_with, enqueued_at)
SELECT gen_random_uuid(), d.tenant_id, d.message_id, array_agg(d.message_id), array_agg(d.device_token),
       array_agg(d.subscriber_id), array_agg(d.environment), NULL, NULL, NULL, '-infinity'
FROM deliveries d
WHERE d.status IN ('queued', 'sending')
GROUP BY d.tenant_id, d.message_id;
DELETE FROM deliveries WHERE status IN ('queued', 'sending');
DROP TABLE delivery_claims;

ALTER TABLE delivery_attempts RENAME TO delivery_attempt_rows;
CREATE VIEW delivery_attempts AS
SELECT delivery_id, attempt, payload, headers, status, reason, apns_id, latency_ms, error, at
FROM delivery_attempt_rows
UNION ALL
SELECT d.id, (a ->> 'n')::int, p.payload,
       replace(p.headers::text, '{apns-id}', coalesce(d.apns_id, d.id)::text)::json,
       (a ->> 's')::int, a ->> 'r',
       CASE WHEN a::jsonb ? 'a' THEN a ->> 'a' ELSE coalesce(d.apns_id, d.id)::text END,
       (a ->> 'l')::int, a ->> 'e', (a ->> 't')::timestamptz
FROM deliveries d
CROSS JOIN LATERAL json_array_elements(d.attempts) AS a
-- An attempt names its own request (`p`) when it differs from the delivery's first one (a
-- provider token renewed between a delivery's attempts changes the redacted authorization).
JOIN delivery_payloads p ON p.id = coalesce((a ->> 'p')::uuid, d.payload_id)
WHERE d.attempts IS NOT NULL;
