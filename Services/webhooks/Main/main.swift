import WebhooksApp

// webhooks: see WebhooksMain, which buzzkit-server runs too.
await WebhooksMain.run()
