-- Frequency-cap counters made cheap to count (issue 26's CPU goal; docs/preferences.md, "Decisions").
--
-- Before: one `bk_cap_send[]` (a composite per push) per subscriber, rewritten by the plpgsql
-- function bk_cap_admit under a `FOR UPDATE` lock for every push a cap counted, capped or not:
-- about 100 µs of Postgres and 320 B of WAL per device in bench/push_fanout.sh's policy round.
-- After: three parallel arrays (the time each push was let through, its message, its category;
-- oldest first), admitted by plain SQL in Policy.decide's one statement, which rewrites the row
-- only when a push is let through and serialises deciders with a transaction-level advisory lock
-- per (tenant, subscriber) (no WAL for the lock) instead of a row lock.
--
-- The row still lives as long as the subscriber (ON DELETE CASCADE: an erasure removes it), and
-- a rewrite drops the pushes older than the tenant's longest cap window, so it never grows past
-- what the caps count.

ALTER TABLE frequency_cap_counters
    ADD COLUMN sent_at    timestamptz[] NOT NULL DEFAULT '{}',
    ADD COLUMN messages   uuid[] NOT NULL DEFAULT '{}',
    ADD COLUMN categories text[] NOT NULL DEFAULT '{}';

UPDATE frequency_cap_counters f
SET sent_at = s.sent_at, messages = s.messages, categories = s.categories
FROM (
    SELECT c.tenant_id, c.subscriber_id,
           array_agg(x.at ORDER BY x.at, x.o) AS sent_at,
           array_agg(x.message ORDER BY x.at, x.o) AS messages,
           array_agg(x.category ORDER BY x.at, x.o) AS categories
    FROM frequency_cap_counters c, unnest(c.sends) WITH ORDINALITY AS x(at, category, message, o)
    GROUP BY c.tenant_id, c.subscriber_id
) s
WHERE f.tenant_id = s.tenant_id AND f.subscriber_id = s.subscriber_id;

ALTER TABLE frequency_cap_counters DROP COLUMN sends;
DROP FUNCTION bk_cap_admit(bk_cap_send[], bk_cap_send[], text[], integer[], integer[], timestamptz, integer);
DROP TYPE bk_cap_send;

-- The key of a subscriber's transaction-level advisory lock (`pg_advisory_xact_lock`): every
-- statement that may rewrite or insert a counter row takes the locks of its subscribers first,
-- in key order (Policy.decide, Policy.lockCounters), so two of them never wait on each other in
-- a circle. One definition, so they cannot disagree. A collision of two subscribers on one key
-- only makes their decisions wait for each other.
CREATE FUNCTION bk_cap_lock_key(tenant uuid, subscriber text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT hashtextextended(tenant::text || '/' || subscriber, 26)
$$;
