-- Tenancy, access and audience (the gateway owns these tables).
-- Workspaces hold tenants (one tenant is typically one app). API keys are stored as the SHA-256 of
-- the whole key string, never the secret itself. Caller-chosen ids (subscribers, tokens, topic
-- keys) use the "C" collation so keyset pagination orders bytes, independent of the locale.
CREATE TABLE workspaces (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tenants (
    id                 uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id       uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name               text NOT NULL,
    -- APNs credentials; the .p8 key is sealed with AES-256-GCM (BUZZKIT_SECRET_KEY), its associated
    -- data the tenant id, so a sealed key cannot be moved to another row. Never returned by the API.
    apns_team_id       text,
    apns_key_id        text,
    apns_private_key   bytea,
    apns_bundle_id     text,
    apns_environment   text NOT NULL DEFAULT 'production' CHECK (apns_environment IN ('sandbox', 'production')),
    -- Quiet hours as local wall-clock times "HH:MM" (the subscriber's time zone); both or neither.
    quiet_hours_start  text CHECK (quiet_hours_start ~ '^([01][0-9]|2[0-3]):[0-5][0-9]$'),
    quiet_hours_end    text CHECK (quiet_hours_end ~ '^([01][0-9]|2[0-3]):[0-5][0-9]$'),
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    CHECK ((quiet_hours_start IS NULL) = (quiet_hours_end IS NULL))
);
-- Keyset pagination of a workspace's tenants, and the tenant -> workspace check of every request.
CREATE INDEX tenants_workspace ON tenants (workspace_id, id);

CREATE TABLE api_keys (
    id            uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    workspace_id  uuid NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    tenant_id     uuid REFERENCES tenants(id) ON DELETE CASCADE,
    kind          text NOT NULL CHECK (kind IN ('workspace', 'tenant', 'client')),
    name          text NOT NULL,
    -- The visible start of the key ("bk_tk_AbCd1234"), to recognise it in lists and logs.
    prefix        text NOT NULL,
    secret_hash   bytea NOT NULL UNIQUE CHECK (length(secret_hash) = 32),
    scopes        text[] NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    -- Written in batches by the gateway (a few seconds late), never once per request.
    last_used_at  timestamptz,
    revoked_at    timestamptz,
    CHECK ((kind = 'workspace') = (tenant_id IS NULL))
);
CREATE INDEX api_keys_workspace ON api_keys (workspace_id, id);

-- Subscribers are addressed by the tenant's own ids. Anonymous installations are subscribers too
-- (anonymous = true) until identify links them to a real id.
CREATE TABLE subscribers (
    tenant_id    uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    id           text COLLATE "C" NOT NULL,
    attributes   jsonb NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(attributes) = 'object'),
    timezone     text,
    locale       text,
    anonymous    boolean NOT NULL DEFAULT false,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);

-- anonymous id -> subscriber id, so events sent later under the anonymous id land on the subscriber.
CREATE TABLE subscriber_aliases (
    tenant_id      uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    anonymous_id   text COLLATE "C" NOT NULL,
    subscriber_id  text COLLATE "C" NOT NULL,
    linked_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, anonymous_id)
);
CREATE INDEX subscriber_aliases_subscriber ON subscriber_aliases (tenant_id, subscriber_id);

CREATE TABLE devices (
    tenant_id        uuid NOT NULL,
    -- APNs device token, lowercase hex.
    token            text COLLATE "C" NOT NULL CHECK (token ~ '^[0-9a-f]+$'),
    subscriber_id    text COLLATE "C" NOT NULL,
    environment      text NOT NULL CHECK (environment IN ('sandbox', 'production')),
    bundle_id        text,
    app_version      text,
    locale           text,
    timezone         text,
    permission       text NOT NULL DEFAULT 'unknown'
                     CHECK (permission IN ('unknown', 'authorized', 'denied', 'provisional', 'ephemeral')),
    active           boolean NOT NULL DEFAULT true,
    registered_at    timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    -- When APNs last rejected the token (410 Unregistered, BadDeviceToken), and why. Registering
    -- the token again clears both and makes it active.
    invalidated_at   timestamptz,
    invalid_reason   text,
    PRIMARY KEY (tenant_id, token),
    FOREIGN KEY (tenant_id, subscriber_id) REFERENCES subscribers (tenant_id, id) ON DELETE CASCADE
);
-- A subscriber's devices in token order (listing, fan-out by subscriber).
CREATE INDEX devices_subscriber ON devices (tenant_id, subscriber_id, token);

CREATE TABLE topics (
    tenant_id   uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    key         text COLLATE "C" NOT NULL,
    name        text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, key)
);

CREATE TABLE topic_subscriptions (
    tenant_id      uuid NOT NULL,
    topic_key      text COLLATE "C" NOT NULL,
    subscriber_id  text COLLATE "C" NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, topic_key, subscriber_id),
    FOREIGN KEY (tenant_id, topic_key) REFERENCES topics (tenant_id, key) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, subscriber_id) REFERENCES subscribers (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX topic_subscriptions_subscriber ON topic_subscriptions (tenant_id, subscriber_id);

-- Idempotency-Key records: the first response to a key is replayed for 24 hours.
-- scope is the tenant id (or the workspace id for admin routes); request_hash covers method, path
-- and body, so the same key with another request is refused.
CREATE TABLE idempotency_records (
    scope            uuid NOT NULL,
    idempotency_key  text NOT NULL,
    request_hash     bytea NOT NULL,
    status           integer,            -- NULL while the first request is still running
    response_body    bytea,
    created_at       timestamptz NOT NULL DEFAULT now(),
    expires_at       timestamptz NOT NULL DEFAULT now() + interval '24 hours',
    PRIMARY KEY (scope, idempotency_key)
);
CREATE INDEX idempotency_records_expiry ON idempotency_records (expires_at);
