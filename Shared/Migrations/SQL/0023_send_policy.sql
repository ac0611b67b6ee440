-- The send policy (issue 26): categories, subscribers' preferences with their history, and
-- frequency caps. Every statement on these tables lives in Shared/Policy (BuzzKitPolicy); every
-- send path asks it before a push goes out, and a push it holds back is written to the ledger as a
-- delivery `suppressed`, with its reason and no APNs request. docs/preferences.md explains the whole.

-- A kind of notification a tenant sends (`marketing`, `security`, ...). `critical` ones (security
-- alerts, purchase receipts) ignore preferences and caps; `default_enabled` is what a subscriber
-- who never chose gets.
CREATE TABLE categories (
    tenant_id        uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    key              text COLLATE "C" NOT NULL,
    name             text NOT NULL,
    description      text,
    default_enabled  boolean NOT NULL DEFAULT true,
    critical         boolean NOT NULL DEFAULT false,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, key)
);

-- The tenant's policy settings: the category of a message that names none (NULL: only the global
-- opt-out applies to it). A category in use here cannot be deleted (409).
CREATE TABLE policy_settings (
    tenant_id         uuid PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    default_category  text COLLATE "C",
    updated_at        timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, default_category) REFERENCES categories (tenant_id, key)
);

-- Frequency caps, in the order the settings list them: at most `max_count` pushes to a subscriber
-- within a rolling `window_seconds` (1 h, 1 d or 7 d), counted once per message however many
-- devices it reached; of one category, or (NULL) of every non-critical one. A category a cap names
-- cannot be deleted (409).
CREATE TABLE frequency_caps (
    tenant_id       uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    position        integer NOT NULL CHECK (position >= 0),
    category_key    text COLLATE "C",
    max_count       integer NOT NULL CHECK (max_count >= 1),
    window_seconds  integer NOT NULL CHECK (window_seconds IN (3600, 86400, 604800)),
    PRIMARY KEY (tenant_id, position),
    FOREIGN KEY (tenant_id, category_key) REFERENCES categories (tenant_id, key)
);
CREATE INDEX frequency_caps_category ON frequency_caps (tenant_id, category_key);

-- A subscriber's global switch (`all`: false is the global unsubscribe). No row: subscribed.
CREATE TABLE subscriber_preferences (
    tenant_id      uuid NOT NULL,
    subscriber_id  text COLLATE "C" NOT NULL,
    all_enabled    boolean NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subscriber_id),
    FOREIGN KEY (tenant_id, subscriber_id) REFERENCES subscribers (tenant_id, id) ON DELETE CASCADE
);

-- A subscriber's choice for one category. No row: the category's default. Deleting the category
-- or the subscriber deletes the choice (the history keeps it).
CREATE TABLE subscriber_category_preferences (
    tenant_id      uuid NOT NULL,
    subscriber_id  text COLLATE "C" NOT NULL,
    category_key   text COLLATE "C" NOT NULL,
    enabled        boolean NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subscriber_id, category_key),
    FOREIGN KEY (tenant_id, subscriber_id) REFERENCES subscribers (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, category_key) REFERENCES categories (tenant_id, key) ON DELETE CASCADE
);
CREATE INDEX subscriber_category_preferences_category ON subscriber_category_preferences (tenant_id, category_key);

-- Every change of a subscriber's preferences, with its time and source, newest first by id. A PUT
-- that changes nothing writes nothing. `changes`: {"all": {"from", "to"}, "categories": {"<key>":
-- {"from", "to"}}}, `from` null when it was the default.
CREATE TABLE subscriber_preference_changes (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id      uuid NOT NULL,
    subscriber_id  text COLLATE "C" NOT NULL,
    source         text NOT NULL CHECK (source IN ('api', 'sdk', 'dashboard')),
    changes        jsonb NOT NULL,
    changed_at     timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (tenant_id, subscriber_id) REFERENCES subscribers (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX subscriber_preference_changes_subscriber
    ON subscriber_preference_changes (tenant_id, subscriber_id, id DESC);

-- What a frequency cap counts: the pushes a subscriber was let through (when, of which category,
-- which message) within the tenant's longest cap window, one row per subscriber. A decision locks
-- the subscriber's row (in subscriber order, so two replicas never wait on each other in a
-- circle), admits what fits and appends it in the same statement: two replicas racing for the
-- last slot let exactly one through. A message already in the list is let through again (a chunk
-- sent again after its replica stopped, a subscriber's second device in another chunk).
CREATE TYPE bk_cap_send AS (at timestamptz, category text, message uuid);

CREATE TABLE frequency_cap_counters (
    tenant_id      uuid NOT NULL,
    subscriber_id  text COLLATE "C" NOT NULL,
    sends          bk_cap_send[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (tenant_id, subscriber_id),
    FOREIGN KEY (tenant_id, subscriber_id) REFERENCES subscribers (tenant_id, id) ON DELETE CASCADE
) WITH (fillfactor = 70);

-- The admission of `candidates` (in order) against `history`: each one is let through when every
-- cap that counts it (its category's, and those without a category) has fewer than its limit
-- within its window, counting what was let through before it. Answers the new list: the history
-- still inside the longest window (`keep_seconds`) plus what was let through, at `now`.
CREATE FUNCTION bk_cap_admit(history bk_cap_send[], candidates bk_cap_send[], cap_categories text[],
                             cap_limits integer[], cap_windows integer[], now timestamptz, keep_seconds integer)
RETURNS bk_cap_send[] LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
DECLARE
    kept bk_cap_send[] := '{}';
    horizon timestamptz := now - make_interval(secs => keep_seconds);
    since timestamptz[];
    caps integer := coalesce(array_length(cap_limits, 1), 0);
    s bk_cap_send;
    c bk_cap_send;
    j integer;
    n integer;
    fits boolean;
BEGIN
    FOR j IN 1 .. caps LOOP
        since[j] := now - make_interval(secs => cap_windows[j]);
    END LOOP;
    IF history IS NOT NULL THEN
        FOREACH s IN ARRAY history LOOP
            IF s.at > horizon THEN kept := kept || s; END IF;
        END LOOP;
    END IF;
    FOREACH c IN ARRAY candidates LOOP
        fits := true;
        FOREACH s IN ARRAY kept LOOP
            IF s.message = c.message THEN fits := false; EXIT; END IF;
        END LOOP;
        CONTINUE WHEN NOT fits;
        FOR j IN 1 .. caps LOOP
            CONTINUE WHEN cap_categories[j] IS NOT NULL AND cap_categories[j] IS DISTINCT FROM c.category;
            n := 0;
            FOREACH s IN ARRAY kept LOOP
                IF s.at > since[j] AND (cap_categories[j] IS NULL OR s.category = cap_categories[j]) THEN
                    n := n + 1;
                END IF;
            END LOOP;
            IF n >= cap_limits[j] THEN fits := false; EXIT; END IF;
        END LOOP;
        IF fits THEN kept := kept || ROW(now, c.category, c.message)::bk_cap_send; END IF;
    END LOOP;
    RETURN kept;
END $$;

-- A suppressed push is a delivery like any other: status `suppressed`, why in `suppressed_reason`,
-- no attempt.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check
    CHECK (status IN ('queued', 'sending', 'sent', 'failed', 'expired', 'invalid_token', 'suppressed')) NOT VALID;
ALTER TABLE deliveries VALIDATE CONSTRAINT deliveries_status_check;
ALTER TABLE deliveries ADD COLUMN suppressed_reason text
    CHECK (suppressed_reason IN ('unsubscribed', 'category_disabled', 'frequency_capped', 'quiet_hours'));
ALTER TABLE deliveries ADD CONSTRAINT deliveries_suppressed_has_reason
    CHECK ((status = 'suppressed') = (suppressed_reason IS NOT NULL));

-- A message whose policy its sender decided already (a workflow's send step, decided with the
-- run): every device gets that decision (`suppressed_reason`, NULL: let through) and apns-sender
-- does not decide again. NULL `policy_decided_at`: apns-sender decides per subscriber.
ALTER TABLE messages ADD COLUMN policy_decided_at timestamptz;
ALTER TABLE messages ADD COLUMN suppressed_reason text
    CHECK (suppressed_reason IN ('unsubscribed', 'category_disabled', 'frequency_capped', 'quiet_hours'));
ALTER TABLE messages ADD CONSTRAINT messages_suppressed_reason_decided
    CHECK (suppressed_reason IS NULL OR policy_decided_at IS NOT NULL);

-- The tenant's identity secret: its backend signs subscriber ids with it (HMAC-SHA256) and the app
-- passes the signature, so a client key can read and change its own subscriber's preferences and
-- nobody else's. Sealed with BUZZKIT_SECRET_KEY (associated data: the tenant id), as the APNs keys
-- are. After a rotation the previous secret still verifies until `identity_secret_previous_until`.
ALTER TABLE tenants ADD COLUMN identity_secret bytea;
ALTER TABLE tenants ADD COLUMN identity_secret_created_at timestamptz;
ALTER TABLE tenants ADD COLUMN identity_secret_previous bytea;
ALTER TABLE tenants ADD COLUMN identity_secret_previous_until timestamptz;

-- New scopes: settings:read and settings:write (categories, the settings). Keys that could read
-- or change the settings before (through workflows:read / workflows:write) keep that power.
UPDATE api_keys SET scopes = array_append(scopes, 'settings:write')
WHERE 'workflows:write' = ANY(scopes) AND NOT 'settings:write' = ANY(scopes);
UPDATE api_keys SET scopes = array_append(scopes, 'settings:read')
WHERE 'workflows:read' = ANY(scopes) AND NOT 'settings:read' = ANY(scopes);

-- Before this migration a message's `category` was only the notification's `aps.category` (the
-- UNNotificationCategory the app or its notification service extension registers), any text. It
-- now also names a category of the tenant (unknown: 422). Every category a tenant already sent in
-- (a stored message, a workflow version's send step) becomes one, enabled by default and not
-- critical, so a backend sending what it sent before keeps working. A value the key rule refuses
-- (letters, digits, `_ - . :`, 1 to 128) cannot be a category and is left out.
INSERT INTO categories (tenant_id, key, name)
SELECT DISTINCT used.tenant_id, used.key, used.key
FROM (
    SELECT tenant_id, content->>'category' AS key FROM messages WHERE content ? 'category'
    UNION
    SELECT v.tenant_id, sent.category #>> '{}'
    FROM workflow_versions v,
         jsonb_path_query(v.definition::jsonb, 'lax $.**.send.category') AS sent(category)
) AS used
WHERE used.key ~ '^[A-Za-z0-9_.:-]{1,128}$'
ON CONFLICT DO NOTHING;
