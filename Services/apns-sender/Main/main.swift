import BuzzKitRuntime

// The apns-sender service. Its domain work arrives with its issue; today it connects, serves
// /healthz, /readyz and /metrics, and stops cleanly on SIGTERM.
await ServiceMain.run(service: "apns-sender")
