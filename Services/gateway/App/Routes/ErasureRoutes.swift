import BuzzKitHTTPServer
import BuzzKitWire
import Foundation

/// Erasures of subscribers (`DELETE /v1/subscribers/{id}` begins one): read one by its id to follow
/// an erasure answered `202`. The record names the person only by a keyed hash (docs/data-lifecycle.md).
enum ErasureRoutes {
    static func counts(_ kinds: [String]) -> JSONValue {
        Schema.object(
            Dictionary(uniqueKeysWithValues: kinds.map { ($0, Schema.integer) }), required: kinds)
    }

    static let erasure = Schema.object(
        [
            "id": Schema.uuid,
            "status": Schema.enumeration(["running", "completed"]),
            "step": Schema.nullable(
                Schema.enumeration(ErasureStep.allCases.map(\.rawValue), "The step under way while running")),
            "subjectHash": Schema.string("HMAC-SHA-256 of tenant id and subscriber id under the server's secret, hex"),
            "apiKeyId": Schema.nullable(Schema.uuid),
            "requestedAt": Schema.timestamp,
            "completedAt": Schema.nullable(Schema.timestamp),
            "removed": counts(ErasureRecord.removedKinds),
            "anonymised": counts(ErasureRecord.anonymisedKinds)
        ],
        required: [
            "id", "status", "step", "subjectHash", "apiKeyId", "requestedAt", "completedAt", "removed", "anonymised"
        ])

    static let deletion = Schema.object(
        [
            "id": Schema.string(),
            "deleted": Schema.boolean,
            "erasure": erasure
        ], required: ["id", "deleted", "erasure"])

    static var routes: [GatewayRoute] {
        [
            GatewayRoute(
                "GET", "/v1/erasures/{id}", id: "getErasure",
                "Read an erasure of a subscriber (what was removed and anonymised so far, whether it is done)",
                access: .tenant(.subscribersRead, clientKeys: false), path: ["id": TextRule.uuid],
                response: erasure, handler: { g, c in try await g.getErasure(c) })
        ]
    }
}

extension Gateway {
    func getErasure(_ context: RequestContext) async throws -> Response {
        let id = try Self.uuidParameter(context, "id", notFound: APIError.notFound("erasure"))
        guard let record = try await eraser.read(id, tenantId: try context.tenant) else {
            throw APIError.notFound("erasure")
        }
        return .json(record.json)
    }
}
