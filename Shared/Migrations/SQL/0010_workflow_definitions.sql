-- Workflow definitions (the gateway owns these tables; the workflow service reads them).
-- A workflow is a key per tenant with an enabled flag and a current version; each saved change is
-- a new, immutable version holding the definition's canonical JSON and its SHA-256 (saving the same
-- definition again finds the same digest and makes no version). Runs keep the version they
-- started with, so versions are never deleted; DELETE of a workflow marks it deleted (and
-- disabled) and notifies `bk_workflow_deleted` for the runtime to cancel its running runs.
ALTER TABLE tenants ADD COLUMN default_timezone text;

CREATE TABLE workflows (
    tenant_id        uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    key              text COLLATE "C" NOT NULL,
    current_version  integer NOT NULL CHECK (current_version >= 1),
    enabled          boolean NOT NULL DEFAULT true,
    -- The current version's trigger event name: which workflows an event starts.
    trigger_event    text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    -- Set by DELETE (the workflow is then gone for the API, disabled, and its runs cancelled);
    -- a PUT of the same key brings it back with a new version.
    deleted_at       timestamptz,
    PRIMARY KEY (tenant_id, key)
);
-- The runtime's lookup: the enabled workflows an event named X starts.
CREATE INDEX workflows_trigger ON workflows (tenant_id, trigger_event) WHERE enabled AND deleted_at IS NULL;

CREATE TABLE workflow_versions (
    tenant_id     uuid NOT NULL,
    workflow_key  text COLLATE "C" NOT NULL,
    version       integer NOT NULL CHECK (version >= 1),
    -- The canonical JSON text (sorted keys, defaults written out) exactly as digested.
    definition    text NOT NULL,
    digest        bytea NOT NULL CHECK (length(digest) = 32),
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, workflow_key, version),
    FOREIGN KEY (tenant_id, workflow_key) REFERENCES workflows (tenant_id, key) ON DELETE CASCADE
);

-- Versions are immutable: a running run's definition can never change under it.
CREATE FUNCTION workflow_versions_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'workflow versions are immutable' USING ERRCODE = 'restrict_violation';
END $$;
CREATE TRIGGER workflow_versions_no_update BEFORE UPDATE ON workflow_versions
    FOR EACH ROW EXECUTE FUNCTION workflow_versions_immutable();
