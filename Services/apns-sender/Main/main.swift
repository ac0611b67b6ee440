import APNsSenderApp

// apns-sender: fan-out, the APNs sender pool and the delivery ledger (APNsSenderMain).
await APNsSenderMain.run()
