-- delivery.sent batches stored as columns, not JSON (issue 27's CPU goal; docs/webhooks.md, "Figures").
--
-- Before: the ledger's record statement built each delivery's item with jsonb_build_object, the
-- batch with jsonb_agg, and stored it as jsonb (compressed with pglz); the webhooks service copied
-- it (decompressed, compressed again) into webhook_messages and printed it back to text for every
-- attempt. About 9 to 12 µs of Postgres per delivery with an endpoint subscribed, against 37 µs
-- for the whole send without one (bench/webhooks.sh send).
-- After: a batch's items are five parallel arrays (one element per delivery, in the same order),
-- aggregated with array_agg and compressed with lz4 (pglz cost about 4 µs of Postgres per
-- delivery there: a batch's arrays, about 13 kB for 100 deliveries, are compressed twice, in the
-- outbox and in the message); its sentAt is the row's occurred_at (a batch comes from one
-- statement, whose deliveries share their send time). The webhooks service writes the JSON
-- (WebhookDeliveryBatch); the body is the one the API document describes, as before.
--
-- In both tables a row holds either data (every other event, and delivery.sent batches of older
-- builds) or the batch columns, never both.
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['webhook_outbox', 'webhook_messages'] LOOP
        EXECUTE format($sql$
            ALTER TABLE %1$I
                ALTER COLUMN data DROP NOT NULL,
                ADD COLUMN batch_delivery_ids   uuid[] COMPRESSION lz4,
                ADD COLUMN batch_message_ids    uuid[] COMPRESSION lz4,
                ADD COLUMN batch_subscriber_ids text[] COMPRESSION lz4,
                ADD COLUMN batch_device_tokens  text[] COMPRESSION lz4,
                ADD COLUMN batch_environments   text[] COMPRESSION lz4,
                ADD CONSTRAINT %2$I CHECK ((data IS NULL) <> (batch_delivery_ids IS NULL))
            $sql$, t, t || '_data_or_batch');
    END LOOP;
END $$;
