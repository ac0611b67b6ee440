-- The ledger has one owner, and a message says when it is done (issue 24).
--
-- Every statement that writes the ledger's tables (messages, deliveries, delivery_chunks,
-- delivery_payloads, the attempts, live_activities, live_activity_start_tokens) lives in one Swift
-- module since this migration: Shared/Ledger (BuzzKitLedger), which the intake, the workflow
-- service, both senders and the gateway call. docs/ledger.md has the tables, who writes what and
-- what each stage leaves behind when a process dies there. Here:
--
-- * A message has a final state: `completed` (with `completed_at`) once every delivery of it is
--   decided, next to `failed`. It is set in the statement that records a message's last pending
--   chunk (a direct batch's messages and a Live Activity request's always complete there), or,
--   when that statement cannot tell (two replicas recording a fan-out's last two chunks at once
--   each still see the other's chunk), by the completion test each of them runs after its commit;
--   the same test follows the end of a fan-out. A replica that stops between the two leaves the
--   message `fanned_out` with nothing pending: the outbox sweeper completes such stragglers,
--   found through `messages_fanned_out`. No column is written per delivery: the messages row is
--   written once more per message, not per chunk.
-- * A Live Activity send is written like a push: the deciding statement writes its message and
--   ONE chunk holding its tokens (`delivery_chunks.kind = 'live_activity'`), claimed by the
--   deciding replica, instead of delivery rows `sending`; the record statement inserts each
--   delivery ONCE, with its outcome and its attempts in the inline format pushes use, and deletes
--   the chunk. A replica that dies in between leaves the chunk claimed: it is never sent again
--   (a push chunk is taken over and re-sent), and once older than BUZZKIT_SENDER_STALE_SENDING
--   apns-sender's sweeper records its deliveries `failed` / `sender_lost`. `delivery_attempt_rows`
--   keeps only the attempts older builds wrote.
-- * Each inline attempt carries the time it was sent (`t`, milliseconds since 1970), which the
--   `delivery_attempts` view shows as `at`. Attempts written before had no time (GET
--   /v1/deliveries/{id} answered `at: null`): they read their delivery row's time (written right
--   after the attempts).

ALTER TABLE messages DROP CONSTRAINT messages_status_check;
ALTER TABLE messages ADD CONSTRAINT messages_status_check
    CHECK (status IN ('queued', 'fanning_out', 'fanned_out', 'completed', 'failed'));
ALTER TABLE messages ADD COLUMN completed_at timestamptz;
-- The outbox sweeper's look for stragglers (`fanned_out` with nothing pending).
CREATE INDEX messages_fanned_out ON messages (updated_at) WHERE status = 'fanned_out';

ALTER TABLE delivery_chunks ADD COLUMN kind text NOT NULL DEFAULT 'push' CHECK (kind IN ('push', 'live_activity'));

CREATE OR REPLACE VIEW delivery_attempts AS
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
-- An attempt names its own request (`p`) when it differs from the delivery's first one (a
-- provider token renewed between a delivery's attempts changes the redacted authorization).
JOIN delivery_payloads p ON p.id = coalesce((a ->> 'p')::uuid, d.payload_id)
WHERE d.attempts IS NOT NULL;

-- Live Activity deliveries older builds left `sending` (their replica stopped before recording
-- them): recorded as lost, as a stale Live Activity chunk is from now on.
UPDATE deliveries SET status = 'failed', error_code = 'sender_lost', updated_at = now(),
    last_reason = 'the liveactivity replica ' || coalesce(sending_by, '?')
                  || ' stopped after deciding this send and before recording it: whether APNs received it is unknown, and it is not sent again'
WHERE status IN ('queued', 'sending');

-- Messages already done: completed, as of their last delivery.
UPDATE messages m SET status = 'completed',
    completed_at = coalesce((SELECT max(d.updated_at) FROM deliveries d WHERE d.message_id = m.id), m.updated_at)
WHERE m.status = 'fanned_out'
  AND NOT EXISTS (SELECT 1 FROM delivery_chunks k WHERE k.message_id = m.id)
  AND NOT EXISTS (SELECT 1 FROM delivery_chunks b
                  WHERE b.message_id IS NULL AND b.tenant_id = m.tenant_id AND m.id = ANY(b.message_ids));
