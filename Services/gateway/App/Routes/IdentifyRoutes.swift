import BuzzKitHTTPServer
import BuzzKitWire
import Foundation

/// `POST /v1/identify {anonymousId, subscriberId}`: links an anonymous installation to a
/// subscriber. Its devices and topic subscriptions move to the subscriber (created when missing;
/// attributes the subscriber lacks are taken over), the anonymous subscriber is removed and an
/// alias is kept so events sent later under the anonymous id land on the subscriber. Calling it
/// again is harmless, and so is identifying an installation under its own anonymous id (nothing
/// moves: that subscriber is no longer anonymous). Client (SDK) keys may call it for their own
/// installation's anonymous id only; the installation records the subscriber id (identify again
/// under another id moves it). `signature` (optional) is the subscriber id's signature the
/// tenant's backend made (`SubscriberSignature`): when given it must be valid (403
/// `forbidden_subscriber`), so an app learns at once that the signature it will pass for
/// preferences is wrong.
enum IdentifyRoutes {
    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "POST", "/v1/identify", id: "identify", "Link an anonymous installation to a subscriber",
                access: .tenant(.subscribersWrite, clientKeys: true),
                body: Schema.object(
                    [
                        "anonymousId": Schema.string(FieldRules.identifierRule),
                        "subscriberId": Schema.string(
                            FieldRules.identifierRule,
                            "The subscriber's id; the anonymous id itself keeps the installation's subscriber"),
                        "signature": Schema.nullable(
                            Schema.string(
                                SubscriberSignature.rule,
                                "The subscriber id's HMAC-SHA256 with the tenant's identity secret, as its backend "
                                    + "made it; when given it must be valid (else 403 forbidden_subscriber)"))
                    ],
                    required: ["anonymousId", "subscriberId"]),
                response: Schema.object([
                    "anonymousId": Schema.string(), "subscriberId": Schema.string(),
                    "devicesMoved": Schema.integer
                ]),
                errors: [.forbiddenSubscriber], handler: { g, c in try await g.identify(c) })
        ]
    }
}

extension Gateway {
    func identify(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let body = try context.request.jsonBody()
        var v = Validator(body, allowed: ["anonymousId", "subscriberId", "signature"])
        let anonymous = v.string("anonymousId", required: true, rule: FieldRules.identifierRule)
        let subscriber = v.string("subscriberId", required: true, rule: FieldRules.identifierRule)
        let signature = v.string("signature", rule: SubscriberSignature.rule)
        try v.check()
        guard let anonymous, let subscriber else { throw APIError.internalError }
        // A client key identifies its own installation only, and the installation remembers the
        // subscriber id (so its events and devices may use it from now on).
        var installation: InstallationRecord?
        if context.key?.kind == .client {
            guard let own = context.installation else { throw InstallationAuthenticator.required }
            guard own.anonymousID == anonymous else { throw InstallationAuthenticator.forbidden }
            installation = own
        }
        if let signature { try await verifySignature(signature, subscriber: subscriber, tenant: tenant) }
        let moved = try await postgres.withTransaction { tx -> Int in
            if anonymous == subscriber {
                try await tx.execute(
                    """
                    INSERT INTO subscribers (tenant_id, id) VALUES ($1::uuid, $2)
                    ON CONFLICT (tenant_id, id) DO UPDATE SET anonymous = false, updated_at = now()
                    """, [tenant, subscriber])
                try await InstallationStore.setSubscriber(subscriber, tenantID: tenant, anonymousID: anonymous, on: tx)
                return 0
            }
            try await tx.execute(
                """
                INSERT INTO subscribers (tenant_id, id, attributes)
                SELECT $1::uuid, $2, coalesce((SELECT attributes FROM subscribers WHERE tenant_id = $1::uuid AND id = $3), '{}'::jsonb)
                ON CONFLICT (tenant_id, id) DO UPDATE SET
                    attributes = EXCLUDED.attributes || subscribers.attributes, updated_at = now()
                """, [tenant, subscriber, anonymous])
            let moved = try await tx.execute(
                """
                UPDATE devices SET subscriber_id = $2, updated_at = now() WHERE tenant_id = $1::uuid AND subscriber_id = $3
                """, [tenant, subscriber, anonymous])
            try await tx.execute(
                """
                INSERT INTO topic_subscriptions (tenant_id, topic_key, subscriber_id)
                SELECT tenant_id, topic_key, $2 FROM topic_subscriptions WHERE tenant_id = $1::uuid AND subscriber_id = $3
                ON CONFLICT DO NOTHING
                """, [tenant, subscriber, anonymous])
            try await tx.execute("DELETE FROM subscribers WHERE tenant_id = $1::uuid AND id = $2", [tenant, anonymous])
            try await tx.execute(
                """
                INSERT INTO subscriber_aliases (tenant_id, anonymous_id, subscriber_id) VALUES ($1::uuid, $2, $3)
                ON CONFLICT (tenant_id, anonymous_id) DO UPDATE SET subscriber_id = EXCLUDED.subscriber_id, linked_at = now()
                """, [tenant, anonymous, subscriber])
            try await InstallationStore.setSubscriber(subscriber, tenantID: tenant, anonymousID: anonymous, on: tx)
            return moved
        }
        if let installation { installationCache.setSubscriber(subscriber, hash: installation.tokenHash) }
        return .json([
            "anonymousId": .string(anonymous), "subscriberId": .string(subscriber),
            "devicesMoved": .int(Int64(moved))
        ])
    }
}
