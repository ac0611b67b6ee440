import GatewayApp

// The gateway: the public HTTP API (GatewayMain).
await GatewayMain.run()
