-- Messages and the delivery ledger (issue 4). The gateway inserts a message (status queued) and
-- puts it on bk:messages; apns-sender owns everything after that: the fan-out into deliveries (one
-- per device), every APNs attempt, and the final status of each delivery.
--
-- Message status: queued -> fanning_out -> fanned_out, or failed (error_code says why, e.g.
-- apns_credentials_missing). The fan-out walks the audience in keyset pages ordered by
-- (subscriber_id, device token) and records the last key after each page (fanout_after_*), so a
-- crashed fan-out resumes where it stopped; pages already done are re-read at most once, and the
-- UNIQUE (message_id, device_token) below keeps that harmless.
CREATE TABLE messages (
    id                       uuid PRIMARY KEY,
    tenant_id                uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    -- {"to": ["sub1", ...]} or {"topic": "key"}
    target                   jsonb NOT NULL,
    -- The content members exactly as the request gave them (title, body, data, ...).
    content                  jsonb NOT NULL,
    -- Only devices of this APNs environment ('sandbox' | 'production'); NULL: all.
    environment              text CHECK (environment IN ('sandbox', 'production')),
    status                   text NOT NULL DEFAULT 'queued'
                             CHECK (status IN ('queued', 'fanning_out', 'fanned_out', 'failed')),
    error_code               text,
    error_message            text,
    -- Devices the message was fanned out to; NULL until the fan-out finished.
    audience_size            integer,
    fanout_count             integer NOT NULL DEFAULT 0,
    fanout_after_subscriber  text COLLATE "C",
    fanout_after_token       text COLLATE "C",
    created_at               timestamptz NOT NULL DEFAULT now(),
    updated_at               timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX messages_tenant ON messages (tenant_id, created_at);
-- The outbox sweeper: messages whose bk:messages entry may have been lost.
CREATE INDEX messages_unfinished ON messages (updated_at) WHERE status IN ('queued', 'fanning_out');

-- One delivery per (message, device). Status: queued -> sending -> sent | failed | expired |
-- invalid_token. `sending` rows carry the replica that holds them (sending_by) and since when
-- (sending_at): a replica that dies mid-send leaves them so; they are NOT sent again (that could
-- reach a device twice) but end as failed / sender_lost once stale.
CREATE TABLE deliveries (
    id             uuid PRIMARY KEY,
    tenant_id      uuid NOT NULL,
    message_id     uuid NOT NULL,
    device_token   text COLLATE "C" NOT NULL,
    subscriber_id  text COLLATE "C" NOT NULL,
    environment    text NOT NULL,
    status         text NOT NULL DEFAULT 'queued'
                   CHECK (status IN ('queued', 'sending', 'sent', 'failed', 'expired', 'invalid_token')),
    attempt_count  integer NOT NULL DEFAULT 0,
    -- The apns-id used for every attempt (chosen when the delivery is claimed).
    apns_id        uuid,
    last_status    integer,
    last_reason    text,
    -- BuzzKit's own code for failed/expired deliveries (apns_credentials_missing, sender_lost, ...).
    error_code     text,
    sending_by     text,
    sending_at     timestamptz,
    sent_at        timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (message_id, device_token)
);
-- GET /v1/messages/{id}/deliveries (keyset by id, optional status filter) and counts by status.
CREATE INDEX deliveries_message_status ON deliveries (message_id, status, id);
CREATE INDEX deliveries_message_id ON deliveries (message_id, id);
-- The sweeper's look for deliveries stuck in `sending` with a dead replica.
CREATE INDEX deliveries_sending ON deliveries (sending_at) WHERE status = 'sending';

-- Every APNs attempt, as sent and as answered.
CREATE TABLE delivery_attempts (
    delivery_id  uuid NOT NULL,
    attempt      integer NOT NULL,
    -- The exact JSON text sent.
    payload      text NOT NULL,
    -- The request headers as sent, the JWT redacted.
    headers      jsonb NOT NULL,
    -- HTTP status; 0 when no answer came (see error).
    status       integer NOT NULL,
    reason       text,
    apns_id      text,
    latency_ms   integer NOT NULL,
    error        text,
    at           timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (delivery_id, attempt)
);
