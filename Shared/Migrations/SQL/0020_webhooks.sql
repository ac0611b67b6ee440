-- Outbound webhooks (issue 27; the tables of Shared/Webhooks, which holds every statement on them:
-- the gateway's routes manage endpoints through it, producers enqueue events through its seam
-- (WebhookOutbox) inside their own statements, the webhooks service sends and records).
--
-- The path of an event: a producer's statement inserts one webhook_outbox row per endpoint
-- subscribed to its type (a join with webhook_subscriptions, so an unsubscribed type costs one
-- index probe and writes nothing), committed with the producer's own rows. A webhooks replica
-- takes outbox rows (FOR UPDATE SKIP LOCKED) and turns them into webhook_messages in the same
-- statement: one message per event, or for batched types (delivery.sent) one message per up to
-- 100 events of an endpoint. A message is the unit of delivery: its id is the webhook-id of every
-- attempt, it is claimed with a lease (next_attempt_at moved past the send's timeout, claim set),
-- sent, and its outcome recorded with one webhook_attempts row per attempt.

-- A tenant's endpoint: where events go and the secret that signs them (AES-256-GCM with
-- BUZZKIT_SECRET_KEY, associated data the endpoint id, as the APNs keys are sealed).
CREATE TABLE webhook_endpoints (
    id                          uuid PRIMARY KEY,
    tenant_id                   uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    url                         text NOT NULL,
    description                 text,
    -- The event types it receives (WebhookEventType raw values); delivery.sent only when listed.
    event_types                 text[] NOT NULL,
    enabled                     boolean NOT NULL DEFAULT true,
    -- Why it is disabled: 'api' (PATCH enabled false) or 'failing' (every attempt failed for
    -- BUZZKIT_WEBHOOKS_DISABLE_AFTER, 5 days by default). NULL while enabled.
    disabled_reason             text CHECK (disabled_reason IN ('api', 'failing')),
    disabled_at                 timestamptz,
    secret_sealed               bytea NOT NULL,
    -- After a rotation the previous secret signs beside the new one until it expires (24 h).
    previous_secret_sealed      bytea,
    previous_secret_expires_at  timestamptz,
    -- Since when every attempt failed (NULL after a success): what disabling is decided on.
    failing_since               timestamptz,
    last_success_at             timestamptz,
    last_failure_at             timestamptz,
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now()
);
-- GET /v1/webhooks: newest first, keyset on (created_at, id).
CREATE INDEX webhook_endpoints_list ON webhook_endpoints (tenant_id, created_at DESC, id DESC);
-- The sweeper's look for endpoints failing too long.
CREATE INDEX webhook_endpoints_failing ON webhook_endpoints (failing_since) WHERE failing_since IS NOT NULL AND enabled;

-- What the producers' seam joins: one row per (tenant, type, endpoint) of each ENABLED endpoint,
-- written with the endpoint (create, PATCH, DELETE, disable). Its primary key answers "does this
-- tenant want this type" with one index probe.
CREATE TABLE webhook_subscriptions (
    tenant_id    uuid NOT NULL,
    event_type   text COLLATE "C" NOT NULL,
    endpoint_id  uuid NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    PRIMARY KEY (tenant_id, event_type, endpoint_id)
);

-- The outbox: events committed by producers, not yet made into messages. Narrow and with one
-- index, since producers write it inside their own hot statements; no foreign key (a deleted
-- endpoint's rows are dropped when taken).
CREATE TABLE webhook_outbox (
    seq          bigserial PRIMARY KEY,
    endpoint_id  uuid NOT NULL,
    tenant_id    uuid NOT NULL,
    event_id     uuid NOT NULL,
    event_type   text NOT NULL,
    occurred_at  timestamptz NOT NULL,
    data         jsonb NOT NULL
);

-- One message to one endpoint: an event, or a batch of events of a batched type.
CREATE TABLE webhook_messages (
    endpoint_id      uuid NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    -- The webhook-id header of every attempt (an event's own id; a batch's, made when it was formed).
    id               uuid NOT NULL,
    tenant_id        uuid NOT NULL,
    event_type       text NOT NULL,
    -- The body's timestamp (a batch: its newest event's).
    occurred_at      timestamptz NOT NULL,
    -- The body's data (a batch: {"deliveries": [...]}).
    data             jsonb NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    -- Attempts made in the current round (a replay starts a new round): the schedule's position.
    attempts         integer NOT NULL DEFAULT 0,
    -- When a replica should send it: due, or the end of a claim's lease. NULL: nothing to do
    -- (delivered, failed, or its endpoint is disabled).
    next_attempt_at  timestamptz,
    -- The claim in force (a token per claim) and who holds it; NULL when no send is under way. A
    -- claim that finds one set knows the previous holder died mid-send: its answer was lost.
    claim            uuid,
    claimed_by       text,
    claimed_at       timestamptz,
    last_status      integer,
    last_error       text,
    delivered_at     timestamptz,
    PRIMARY KEY (endpoint_id, id)
);
-- The replicas' claim: due first.
CREATE INDEX webhook_messages_due ON webhook_messages (next_attempt_at) WHERE next_attempt_at IS NOT NULL;
-- Replay {since} of an endpoint.
CREATE INDEX webhook_messages_endpoint ON webhook_messages (endpoint_id, created_at);
-- Retention.
CREATE INDEX webhook_messages_created ON webhook_messages (created_at);

-- Every attempt, and the endpoint's disabling (event_type webhook.disabled, no message).
CREATE TABLE webhook_attempts (
    id               bigserial PRIMARY KEY,
    endpoint_id      uuid NOT NULL REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
    message_id       uuid,
    event_type       text NOT NULL,
    attempted_at     timestamptz NOT NULL,
    -- delivered (2xx), retrying (another attempt is scheduled at next_attempt_at), failed (the
    -- schedule is exhausted), lost (the replica sending it stopped; sent again with the same id),
    -- disabled (the endpoint was disabled for failing).
    outcome          text NOT NULL CHECK (outcome IN ('delivered', 'retrying', 'failed', 'lost', 'disabled')),
    http_status      integer,
    latency_ms       integer,
    -- The first 1 kB of the answer's body, as text.
    response         text,
    error            text,
    next_attempt_at  timestamptz,
    attempt          integer
);
-- GET /v1/webhooks/{id}/attempts: newest first, keyset on id.
CREATE INDEX webhook_attempts_list ON webhook_attempts (endpoint_id, id DESC);
CREATE INDEX webhook_attempts_time ON webhook_attempts (attempted_at);

-- An event's id derived from what it reports (a producer that runs twice derives the same id):
-- the md5 of '<kind>:<name>' read as a UUID.
CREATE FUNCTION bk_webhook_event_id(kind text, name text) RETURNS uuid
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT md5(kind || ':' || name)::uuid $$;
