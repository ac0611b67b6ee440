import LiveActivityApp

// liveactivity: Live Activity sends from bk:la (LiveActivityMain).
await LiveActivityMain.run()
