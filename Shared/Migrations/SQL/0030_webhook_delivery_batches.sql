-- delivery.sent batches stored as columns, not JSON (issue 27's CPU goal; docs/webhooks.md, "Figures").
--
-- Before: the ledger's record statement built each delivery's item with jsonb_build_object, the
-- batch with jsonb_agg, and stored it as jsonb (compressed with pglz); the webhooks service copied
-- it (decompressed, compressed again) into webhook_messages and printed it back to text for every
-- attempt. About 17 µs of Postgres per delivery with an endpoint subscribed, against 37 µs for the
-- whole send without one (bench/webhooks.sh send).
-- After: a batch's items are five parallel arrays (one element per delivery, in the same order),
-- aggregated with array_agg and compressed with lz4; its sentAt is the row's occurred_at (a batch
-- comes from one statement, whose deliveries share their send time). The webhooks service writes
-- the JSON (WebhookDeliveryBatch); the body is the one the API document describes, as before.
--
-- A row holds either data (every other event, and delivery.sent batches of older builds) or the
-- batch columns, never both.

ALTER TABLE webhook_outbox
    ALTER COLUMN data DROP NOT NULL,
    ADD COLUMN batch_delivery_ids   uuid[],
    ADD COLUMN batch_message_ids    uuid[],
    ADD COLUMN batch_subscriber_ids text[],
    ADD COLUMN batch_device_tokens  text[],
    ADD COLUMN batch_environments   text[],
    ADD CONSTRAINT webhook_outbox_data_or_batch CHECK ((data IS NULL) <> (batch_delivery_ids IS NULL));

ALTER TABLE webhook_messages
    ALTER COLUMN data DROP NOT NULL,
    ADD COLUMN batch_delivery_ids   uuid[],
    ADD COLUMN batch_message_ids    uuid[],
    ADD COLUMN batch_subscriber_ids text[],
    ADD COLUMN batch_device_tokens  text[],
    ADD COLUMN batch_environments   text[],
    ADD CONSTRAINT webhook_messages_data_or_batch CHECK ((data IS NULL) <> (batch_delivery_ids IS NULL));

-- lz4: a batch's arrays (about 13 kB for 100 deliveries) are compressed on every insert, twice per
-- batch (outbox, then message); pglz cost about 4 µs of Postgres per delivery there.
ALTER TABLE webhook_outbox
    ALTER COLUMN batch_delivery_ids SET COMPRESSION lz4,
    ALTER COLUMN batch_message_ids SET COMPRESSION lz4,
    ALTER COLUMN batch_subscriber_ids SET COMPRESSION lz4,
    ALTER COLUMN batch_device_tokens SET COMPRESSION lz4,
    ALTER COLUMN batch_environments SET COMPRESSION lz4;
ALTER TABLE webhook_messages
    ALTER COLUMN batch_delivery_ids SET COMPRESSION lz4,
    ALTER COLUMN batch_message_ids SET COMPRESSION lz4,
    ALTER COLUMN batch_subscriber_ids SET COMPRESSION lz4,
    ALTER COLUMN batch_device_tokens SET COMPRESSION lz4,
    ALTER COLUMN batch_environments SET COMPRESSION lz4;
