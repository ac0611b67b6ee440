import IngestApp

// ingest: see IngestMain, which buzzkit-server runs too.
await IngestMain.run()
