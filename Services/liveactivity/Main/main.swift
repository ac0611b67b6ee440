import LiveActivityApp

// liveactivity: see LiveActivityMain, which buzzkit-server runs too.
await LiveActivityMain.run()
