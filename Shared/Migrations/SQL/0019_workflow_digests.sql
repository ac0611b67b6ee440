-- Digest and throttle steps (issue 28). Exactness comes from these keys and row locks; the
-- workflow service's statements on them live in BuzzKitWorkflowRuns (WorkflowRunStore+Digest).

-- A run stopped by a throttle ends `throttled` (with its reason in the state).
ALTER TABLE workflow_runs DROP CONSTRAINT workflow_runs_status_check;
ALTER TABLE workflow_runs ADD CONSTRAINT workflow_runs_status_check
    CHECK (status IN ('pending', 'running', 'completed', 'cancelled', 'failed', 'throttled')) NOT VALID;
ALTER TABLE workflow_runs VALIDATE CONSTRAINT workflow_runs_status_check;

-- A digest's open window: the run that trigger events of (workflow, subscriber, key) join until
-- closes_at. One row per key, so two replicas opening the same window at once meet here: one
-- inserts, the other (waiting on the row) joins its run. An event joins with
-- INSERT ... ON CONFLICT DO UPDATE (the row stays locked until its transaction, which writes the
-- event, commits). The run's close deletes the row (waiting for any joiner in flight) before it
-- reads what it collected, so an event either is in what the close reads or finds no row and
-- opens the next digest. A row whose closes_at passed before its run closed (a late replica) is
-- taken over by the next event, which opens the next digest; the late run still reads its own.
-- A run that ends in its window (cancelled, failed) deletes its row when its state is saved.
CREATE TABLE workflow_digest_windows (
    tenant_id      uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    workflow_key   text COLLATE "C" NOT NULL,
    subscriber_id  text COLLATE "C" NOT NULL,
    -- The rendered key ('' without a key); over 512 bytes, 'sha256:' || its digest in hex.
    digest_key     text COLLATE "C" NOT NULL,
    run_id         uuid NOT NULL,
    closes_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, workflow_key, subscriber_id, digest_key)
);

-- Every trigger event a digest collected (the one that started its run too), once per
-- (workflow, event id): a redelivered entry finds its events here and counts none twice, and
-- the run reads its own in order of arrival (seq). No foreign keys: a key check per joining
-- event would lock the run's (or the tenant's) row for each; rows live as long as their run.
CREATE TABLE workflow_digest_events (
    tenant_id     uuid NOT NULL,
    workflow_key  text COLLATE "C" NOT NULL,
    event_id      text COLLATE "C" NOT NULL,
    run_id        uuid NOT NULL,
    seq           bigint GENERATED ALWAYS AS IDENTITY,
    name          text NOT NULL,
    data          jsonb NOT NULL,
    occurred_at   timestamptz NOT NULL,
    joined_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, workflow_key, event_id)
);
CREATE INDEX workflow_digest_events_run ON workflow_digest_events (run_id, seq);

-- A throttle's passes per (workflow, step, subscriber, key), in one row: a run asks with one
-- INSERT ... ON CONFLICT DO UPDATE that, under the row's lock, drops passes older than the
-- window and adds the run's own unless `limit` are left (or it is there already: a run asked
-- again is the same pass). pass_keys are the runs' trigger keys, pass_times when each passed.
CREATE TABLE workflow_throttles (
    tenant_id      uuid NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    workflow_key   text COLLATE "C" NOT NULL,
    step           text COLLATE "C" NOT NULL,
    subscriber_id  text COLLATE "C" NOT NULL,
    throttle_key   text COLLATE "C" NOT NULL,
    pass_keys      text[] NOT NULL,
    pass_times     timestamptz[] NOT NULL,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, workflow_key, step, subscriber_id, throttle_key)
);
