-- Live Activity sends in the delivery ledger (issue 17). A `POST /v1/live-activities/send` is a
-- message like any push: one `messages` row (kind `live_activity`, target {"to": [subscriber]},
-- content {"liveActivity": <the request>}), one delivery per token it went to (device_token is the
-- activity's push token or a push-to-start token) and every APNs attempt in delivery_attempts.
-- The liveactivity service writes the message already `fanned_out` (it has no fan-out), so the
-- outbox sweeper never re-queues it. Its deliveries are written `sending` by the replica that
-- sends them, without a delivery_claims row (apns-sender's sweeper re-sends claimed chunks as
-- ordinary pushes): a replica dying mid-send leaves them `sending`, never sent a second time.
ALTER TABLE messages ADD COLUMN kind text NOT NULL DEFAULT 'push' CHECK (kind IN ('push', 'live_activity'));
