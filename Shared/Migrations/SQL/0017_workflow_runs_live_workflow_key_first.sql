-- The live runs of one workflow (cancel on DELETE of a workflow, the deleted-workflow sweep), keyed
-- workflow first. Keyed (tenant_id, workflow_key), the planner took this index for the routing of
-- a subscriber's events (tenant_id = $1 AND subscriber_id = $2) whenever the table had no
-- statistics yet (a new table filling up): it then read every live run of the tenant for each
-- bk:events entry (4-7 ms an entry in bench/workflows.sh) instead of the subscriber's few through
-- workflow_runs_live. Workflow first, it serves only lookups that name the workflow.
DROP INDEX workflow_runs_live_workflow;
CREATE INDEX workflow_runs_live_workflow ON workflow_runs (workflow_key, tenant_id) WHERE status IN ('pending', 'running');
