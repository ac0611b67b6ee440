-- Installations (issue 3): a client key (bk_ck_...) ships inside an app and is the same for every
-- installation, so each installation registers once (POST /v1/installations) and receives its own
-- secret (bk_inst_...), sent in the BuzzKit-Installation header on every other client-key request.
-- Like API keys, only the SHA-256 of the whole token string is stored. The installation's
-- identities are its anonymous id and, once identify ran, its subscriber id; a client key may only
-- write events, devices and identify for those.
CREATE TABLE installations (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id      uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    -- The key that registered the installation; revoking that key revokes its installations.
    api_key_id     uuid NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
    anonymous_id   text COLLATE "C" NOT NULL CHECK (octet_length(anonymous_id) BETWEEN 1 AND 128),
    -- Set by identify (the latest subscriber id the installation identified as).
    subscriber_id  text COLLATE "C",
    token_hash     bytea NOT NULL UNIQUE CHECK (length(token_hash) = 32),
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    revoked_at     timestamptz
);
-- One live installation per anonymous id and tenant: nobody can register a second one for an
-- anonymous id that is taken (409 installation_exists). A revoked one frees its anonymous id.
CREATE UNIQUE INDEX installations_anonymous ON installations (tenant_id, anonymous_id) WHERE revoked_at IS NULL;
-- Revoking a key revokes its installations.
CREATE INDEX installations_api_key ON installations (api_key_id) WHERE revoked_at IS NULL;
