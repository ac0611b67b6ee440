-- Live Activities (issue 17): the token registry. The gateway writes both tables from the SDK's
-- registrations (idempotent upserts); the liveactivity service reads them to send and writes back
-- what sending taught it (the last timestamp sent, an activity ended by an `end`, a token APNs
-- refused).

-- One row per activity, keyed by the activity's id as the SDK registered it (ActivityKit's
-- `Activity.id`, unique per device); registering it again for another subscriber moves it there
-- (after identify the SDK registers its tokens again for the identified subscriber). `token` is the activity's current push token: a rotation
-- replaces it, so the old token is never pushed again. `state` is `active` until the device
-- reports the activity ended or dismissed (DELETE) or an `end` event was sent: ended is final,
-- a later registration of the same activity does not revive it.
CREATE TABLE live_activities (
    tenant_id             uuid NOT NULL,
    subscriber_id         text COLLATE "C" NOT NULL,
    activity_id           text COLLATE "C" NOT NULL,
    attributes_type       text NOT NULL,
    -- Lowercase hex, like device tokens.
    token                 text COLLATE "C" NOT NULL CHECK (token ~ '^[0-9a-f]+$'),
    environment           text NOT NULL CHECK (environment IN ('sandbox', 'production')),
    bundle_id             text,
    state                 text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'ended')),
    -- `device` (DELETE from the SDK) or `send` (an `end` event went out); NULL while active.
    ended_by              text CHECK (ended_by IN ('device', 'send')),
    ended_at              timestamptz,
    -- `invalid` once APNs refused the token (410, BadDeviceToken): never used again unless it is
    -- registered again (a PUT with a token sets it back to `active`).
    token_status          text NOT NULL DEFAULT 'active' CHECK (token_status IN ('active', 'invalid')),
    token_invalid_reason  text,
    token_invalidated_at  timestamptz,
    -- The `timestamp` (epoch seconds) of the last event sent to it, and when it was sent: an
    -- update older than that is not sent (iOS would drop it).
    last_timestamp        bigint,
    last_event            text,
    last_sent_at          timestamptz,
    registered_at         timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, activity_id),
    FOREIGN KEY (tenant_id, subscriber_id) REFERENCES subscribers (tenant_id, id) ON DELETE CASCADE
);
-- A subscriber's registry in activity order (GET .../live-activities, keyset pages).
CREATE INDEX live_activities_subscriber ON live_activities (tenant_id, subscriber_id, activity_id);

-- Push-to-start tokens (iOS 17.2+): one per attributes type per device. The device is the
-- installation the client key named (`BuzzKit-Installation`); a registration by a server key
-- names no installation, so there the token itself is the device key. A rotation on the same
-- device replaces the row's token.
CREATE TABLE live_activity_start_tokens (
    tenant_id             uuid NOT NULL,
    subscriber_id         text COLLATE "C" NOT NULL,
    attributes_type       text COLLATE "C" NOT NULL,
    device_key            text COLLATE "C" NOT NULL,
    token                 text COLLATE "C" NOT NULL CHECK (token ~ '^[0-9a-f]+$'),
    environment           text NOT NULL CHECK (environment IN ('sandbox', 'production')),
    bundle_id             text,
    token_status          text NOT NULL DEFAULT 'active' CHECK (token_status IN ('active', 'invalid')),
    token_invalid_reason  text,
    token_invalidated_at  timestamptz,
    last_sent_at          timestamptz,
    registered_at         timestamptz NOT NULL DEFAULT now(),
    updated_at            timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subscriber_id, attributes_type, device_key),
    FOREIGN KEY (tenant_id, subscriber_id) REFERENCES subscribers (tenant_id, id) ON DELETE CASCADE
);
-- The same token registered again from elsewhere (a server key after the SDK) is the same device.
CREATE UNIQUE INDEX live_activity_start_tokens_token ON live_activity_start_tokens (tenant_id, attributes_type, token);
