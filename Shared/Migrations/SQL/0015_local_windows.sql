-- Local windows (issue 16): a workflow hands a notification to the device at the start of its
-- wait and cancels it centrally, both as silent pushes through apns-sender and the ledger like
-- any push. Two more kinds of message:
--   local_plan   content {"local": <the plan as bk.local carries it>}: aps {"content-available": 1},
--                apns-push-type background, apns-priority 5, bk.local = the plan;
--   local_cancel content {"cancel": {"runId": "<run id>"}}: the same silent push with bk.cancel.
-- The workflow service writes them (message ids derived from run, step and purpose, so a step
-- executed again writes nothing twice); apns-sender builds the request from kind and content.
ALTER TABLE messages DROP CONSTRAINT messages_kind_check;
ALTER TABLE messages ADD CONSTRAINT messages_kind_check
    CHECK (kind IN ('push', 'live_activity', 'local_plan', 'local_cancel'));
