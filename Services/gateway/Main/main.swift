import GatewayApp

// gateway: see GatewayMain, which buzzkit-server runs too.
await GatewayMain.run()
