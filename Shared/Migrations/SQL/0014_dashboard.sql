-- The dashboard's reads (issue 18).
--
-- GET /v1/messages lists a tenant's messages newest first, keyset-paged on (created_at, id): the
-- index carries both, so each page is one index range read backwards, whatever the tenant's
-- history. It replaces messages_tenant (tenant_id, created_at), of which it is a superset, so the
-- messages table keeps the same number of indexes to write.
--
-- The overview's aggregates (GET /v1/stats/messages) read a window of messages through this index
-- and their deliveries through deliveries_message_id; no index is added to deliveries, whose
-- updates stay heap-only (see 0009). GET /v1/stats/events walks the event names of
-- events_name_time (a loose index scan), so events get no new index either.
CREATE INDEX messages_tenant_recent ON messages (tenant_id, created_at, id);
DROP INDEX messages_tenant;
