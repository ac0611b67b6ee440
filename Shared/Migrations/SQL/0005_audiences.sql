-- Audiences (issue 6): saved segments, and the indexes that make the common expression shapes one
-- indexed query on a million subscribers (the SQL is BuzzKitAudience's AudienceQuery).
--
-- Saved segments: an expression in the audience language, validated and compiled when saved; the
-- text is stored as written and parsed again on use.
CREATE TABLE segments (
    tenant_id   uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    key         text COLLATE "C" NOT NULL,
    name        text NOT NULL,
    expression  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, key)
);

-- Attribute equality and `in [...]` compile to containment (attributes @> '{"plan":"pro"}'),
-- served by this index for any (dotted) path.
CREATE INDEX subscribers_attributes ON subscribers USING gin (attributes jsonb_path_ops);

-- did("name", within: ...) and count("name", within: ...): the matching events of every subscriber
-- at once, read from the index alone (subscriber_id is included), per partition.
CREATE INDEX events_name_time ON events (tenant_id, name, occurred_at) INCLUDE (subscriber_id);

-- Topic membership uses topic_subscriptions' primary key (tenant_id, topic_key, subscriber_id).
