import APNsSenderApp

// apns-sender: see APNsSenderMain, which buzzkit-server runs too.
await APNsSenderMain.run()
