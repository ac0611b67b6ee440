-- A chunk's device arrays compressed with lz4 instead of pglz (issue 24's CPU bar: the fan-out's
-- Postgres CPU per delivery as good as before the ledger's owner; docs/benchmarks.md, "Push
-- fan-out").
--
-- A fan-out page writes its chunks' four arrays (about 10 kB for 100 devices) to TOAST,
-- compressed: pglz_compress was about 3% of Postgres's CPU in bench/push_fanout.sh, and lz4
-- compresses several times faster. Existing rows keep their pglz values (Postgres reads either);
-- a chunk lives seconds, so they are gone soon after the upgrade.
ALTER TABLE delivery_chunks
    ALTER COLUMN message_ids SET COMPRESSION lz4,
    ALTER COLUMN tokens SET COMPRESSION lz4,
    ALTER COLUMN subscriber_ids SET COMPRESSION lz4,
    ALTER COLUMN environments SET COMPRESSION lz4;
