import IngestApp

// The ingest service: events from bk:ingest into Postgres (IngestMain).
await IngestMain.run()
