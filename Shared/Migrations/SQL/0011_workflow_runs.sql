-- Workflow runs (issue 15; the workflow service owns these tables, the gateway starts, cancels and
-- reads runs through BuzzKitWorkflowRuns). A run is one row: its state (the engine's
-- WorkflowRunState as jsonb), its ONE timer (timer_token, timer_due_at) and when a replica should
-- next look at it (wake_at), all written in one statement, so a timer can never be lost or
-- outlive the state that set it. Replicas claim rows with wake_at <= now FOR UPDATE SKIP LOCKED:
-- each step is executed by one of them, and a replica killed mid-step leaves its transaction
-- rolled back and the row due again.
CREATE TABLE workflow_runs (
    id                uuid PRIMARY KEY,
    tenant_id         uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    workflow_key      text COLLATE "C" NOT NULL,
    -- The version the run started with; it keeps it (versions are immutable).
    version           integer NOT NULL CHECK (version >= 1),
    subscriber_id     text COLLATE "C" NOT NULL,
    -- One run per (workflow, trigger): the trigger event's id, or for POST .../trigger
    -- 'api:' || the caller's idempotency key (or a fresh id). A redelivered stream entry meets
    -- this key and starts nothing.
    trigger_key       text COLLATE "C" NOT NULL,
    -- pending: inserted (by the gateway's trigger route) but not yet started by the engine.
    status            text NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'cancelled', 'failed')),
    failure_code      text,
    -- WorkflowRunState.jsonValue; NULL while pending.
    state             jsonb,
    -- While pending: {"trigger": {id, name, data, occurredAt}} (what WorkflowEngine.start gets).
    start_input       jsonb,
    -- The cancelOn and waitFor event names of the run's version (WorkflowDefinition.reactsToEvents):
    -- which of the subscriber's events are routed to the run's inbox.
    reacts_to         text[] NOT NULL DEFAULT '{}',
    -- The run's one timer (WorkflowRunState.timer); NULL: none.
    timer_token       text,
    timer_due_at      timestamptz,
    -- When a replica should next advance the run: the timer, or -infinity when its inbox holds
    -- inputs (a cancel, a routed event) or it is pending. NULL: nothing to do (ended, or waiting
    -- for nothing). Written with the state.
    wake_at           timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    started_at        timestamptz,
    ended_at          timestamptz,
    UNIQUE (tenant_id, workflow_key, trigger_key),
    FOREIGN KEY (tenant_id, workflow_key, version) REFERENCES workflow_versions (tenant_id, workflow_key, version)
);
-- The replicas' claim: due rows first.
CREATE INDEX workflow_runs_wake ON workflow_runs (wake_at) WHERE wake_at IS NOT NULL;
-- GET /v1/workflows/{key}/runs (newest first, keyset on (created_at, id)), with or without status.
CREATE INDEX workflow_runs_list ON workflow_runs (tenant_id, workflow_key, created_at DESC, id DESC);
CREATE INDEX workflow_runs_list_subscriber ON workflow_runs (tenant_id, workflow_key, subscriber_id, created_at DESC, id DESC);
-- Event routing (cancelOn, waitFor): a subscriber's live runs.
CREATE INDEX workflow_runs_live ON workflow_runs (tenant_id, subscriber_id) WHERE status IN ('pending', 'running');
-- Cancelling a deleted workflow's live runs.
CREATE INDEX workflow_runs_live_workflow ON workflow_runs (tenant_id, workflow_key) WHERE status IN ('pending', 'running');

-- A run's inbox: inputs that reached it (a routed event, a cancel request) and that the replica
-- advancing it applies in order, deleting them in the same transaction as the new state.
CREATE TABLE workflow_run_inputs (
    id          bigserial PRIMARY KEY,
    run_id      uuid NOT NULL REFERENCES workflow_runs(id) ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('event', 'cancel')),
    -- event: {id, name, data, occurredAt}; cancel: {"reason": "..."}.
    payload     jsonb NOT NULL,
    -- An event routed twice (a redelivered stream entry) lands once: its event id.
    dedupe_key  text COLLATE "C",
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (run_id, dedupe_key)
);
CREATE INDEX workflow_run_inputs_run ON workflow_run_inputs (run_id, id);

-- Triggers that started no run because their subscriber is unknown (visible, and counted in the
-- workflow service's metrics); once per (workflow, trigger) as well.
CREATE TABLE workflow_trigger_skips (
    tenant_id      uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    workflow_key   text COLLATE "C" NOT NULL,
    trigger_key    text COLLATE "C" NOT NULL,
    subscriber_id  text COLLATE "C" NOT NULL,
    reason         text NOT NULL,
    at             timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, workflow_key, trigger_key)
);

-- A workflow's send is a message like any other; these name where it came from, for
-- GET /v1/messages/{id}. NULL for messages sent through POST /v1/messages.
ALTER TABLE messages ADD COLUMN workflow_key text;
ALTER TABLE messages ADD COLUMN workflow_version integer;
ALTER TABLE messages ADD COLUMN workflow_run_id uuid;
ALTER TABLE messages ADD COLUMN workflow_step text;
