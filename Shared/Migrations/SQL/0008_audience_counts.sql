-- Audiences (issue 6): `did(...)` and `count(...)` also credit a subscriber with the events stored
-- under an anonymous id aliased to it (a join of the matching events with subscriber_aliases).
-- events_name_time (0005) returns a name's events in time order, so that join scanned every
-- matching event a second time and hashed it (bench: about 0.4 s of a 30-day count on 10M events).
-- This index returns them in owner order (COLLATE "C", the collation of subscriber_aliases and
-- subscribers ids, and of the compiled SQL), so the alias join is a merge join with
-- subscriber_aliases' primary key that reads only the events of aliased ids, and a grouping by
-- owner can read the events already sorted. occurred_at is a key column: the window is checked
-- inside the index (index-only scan).
CREATE INDEX events_name_subscriber ON events (tenant_id, name, subscriber_id COLLATE "C", occurred_at);
