-- The ledger's write path (issue 4's benchmark). Each delivery is written three times: inserted
-- `queued` by the fan-out, claimed (`queued -> sending`), then ended with its outcome. With status
-- in two indexes, both updates were non-HOT: every version of the row went into every index of
-- `deliveries` (about 9 index writes per delivery just for the two updates). Here:
--
-- * No index of `deliveries` mentions a column the sender changes (status, sending_at, ...), so
--   the claim and the final update are HOT (heap-only) updates: a new row version on the same
--   page, no index writes. `fillfactor = 50` leaves the room on each page for those versions
--   (pruned as soon as no snapshot needs them). Measured on this machine (chunks of 100): claim
--   50 -> 22 us and final update + attempts 85 -> 41 us of Postgres time per delivery.
-- * GET /v1/messages/{id}/deliveries (status filter) and the counts by status now read the
--   message's rows through deliveries_message_id (message_id, id) and filter on the heap: one
--   pass over the message's rows, instead of an index-only scan.
-- * Deliveries stuck in `sending` after a replica died were found through a partial index on
--   status; they are now found through `delivery_claims`: one row per claimed chunk (the ids,
--   the replica, the time), inserted by the claim statement and deleted by the statement that
--   records the chunk's outcomes. A claim row older than BUZZKIT_SENDER_STALE_SENDING belongs to
--   a replica that stopped mid-chunk: the sweeper ends those of its deliveries still `sending`
--   as failed / sender_lost and deletes the row.
-- * `delivery_attempts.headers` is `json` (validated, stored as written) instead of `jsonb`
--   (parsed into a tree): the headers are only ever written once and read back whole, and
--   parsing them was a quarter of the cost of writing an attempt. Duplicate names cannot occur
--   (the sender writes each header once).

DROP INDEX deliveries_message_status;
DROP INDEX deliveries_sending;
ALTER TABLE deliveries SET (fillfactor = 50);

CREATE TABLE delivery_claims (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    delivery_ids  uuid[] NOT NULL,
    sending_by    text NOT NULL,
    claimed_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX delivery_claims_claimed_at ON delivery_claims (claimed_at);

-- Deliveries already `sending` when this migration runs get a claim row each (one per replica),
-- so the sweeper still ends them if their replica is gone.
INSERT INTO delivery_claims (delivery_ids, sending_by, claimed_at)
SELECT array_agg(id), coalesce(sending_by, ''), min(coalesce(sending_at, updated_at))
FROM deliveries WHERE status = 'sending'
GROUP BY sending_by;

ALTER TABLE delivery_attempts ALTER COLUMN headers TYPE json USING headers::json;
