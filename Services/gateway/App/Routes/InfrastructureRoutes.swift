import BuzzKitWire

/// The routes every service serves (registered by the runtime) and the OpenAPI document itself.
enum InfrastructureRoutes {
    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "GET", "/healthz", id: "health", "Liveness: 200 while the process runs", access: .infrastructure,
                response: Schema.object(["status": Schema.string(), "service": Schema.string()]), handler: nil),
            GatewayRoute(
                "GET", "/readyz", id: "readiness", "Readiness: 200 when PostgreSQL and Redis answer",
                access: .infrastructure,
                response: Schema.object([
                    "ready": Schema.boolean, "service": Schema.string(),
                    "checks": Schema.anyObject
                ]), handler: nil),
            GatewayRoute(
                "GET", "/metrics", id: "metrics", "Prometheus metrics (text exposition format, not JSON)",
                access: .infrastructure, response: Schema.string(), handler: nil),
            GatewayRoute(
                "GET", "/openapi.json", id: "openapi", "This OpenAPI document (served as is, not in the envelope)",
                access: .open, response: Schema.anyObject, handler: nil)
        ]
    }
}

extension GatewayRoute {
    /// Every route the gateway answers, in registration order. The router registration and the
    /// OpenAPI document are both generated from this list.
    public static let table: [GatewayRoute] =
        InfrastructureRoutes.routes + TenantRoutes.routes + APIKeyRoutes.routes + SubscriberRoutes.routes
        + DeviceRoutes.routes + LiveActivityRoutes.routes + IdentifyRoutes.routes + InstallationRoutes.routes
        + TopicRoutes.routes + SegmentRoutes.routes + EventRoutes.routes + MessageRoutes.routes
        + StatsRoutes.routes + LiveActivitySendRoutes.routes + ErasureRoutes.routes
        + WorkflowRoutes.routes + WebhookRoutes.routes + SettingsRoutes.routes + CategoryRoutes.routes
        + PreferenceRoutes.routes + RetentionRoutes.routes
}
