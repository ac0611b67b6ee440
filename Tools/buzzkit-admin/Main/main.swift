import AdminCommand

// buzzkit-admin: operator commands (AdminCommand: migrate, bootstrap).
await AdminCommand.run()
