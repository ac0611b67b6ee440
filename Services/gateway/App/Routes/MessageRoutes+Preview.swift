import BuzzKitAPNs
import BuzzKitContracts
import BuzzKitHTTPServer
import BuzzKitIntake
import BuzzKitWire
import Foundation

/// `POST /v1/messages/preview`: the APNs request the sender would make for a message body, built
/// by the very code the sender runs (`APNsRequest(deviceToken:topic:content:messageId:)`), so a
/// composer shows the exact payload bytes and headers without re-implementing the builder.
/// Validates like `POST /v1/messages` (every problem at once, 422) and sends nothing. The target
/// is optional here; when given it is checked too.
extension MessageRoutes {
    /// The message id the preview's payload carries (the real one is chosen when it is sent).
    static let previewMessageId = "00000000-0000-0000-0000-000000000000"

    static var previewRoute: GatewayRoute {
        GatewayRoute(
            "POST", "/v1/messages/preview", id: "previewMessage",
            "The exact APNs payload and headers the sender would build for a message body; sends nothing",
            access: .tenant(.messagesSend, clientKeys: false), body: Schema.ref("PreviewMessageRequest"),
            response: Schema.ref("MessagePreview"),
            errors: [.validationFailed], handler: { g, c in try await g.previewMessage(c) })
    }
}

extension Gateway {
    func previewMessage(_ context: RequestContext) async throws -> Response {
        let tenant = try context.tenant
        let body = try context.request.jsonBody()
        // Without a target the rest is checked as a send would check it (a stand-in target keeps
        // MessageIntake from asking for one); with a target, the target is checked too.
        var checked = body
        if case .object(var object) = body,
            !MessageIntake.targetMembers.contains(where: { object[$0].map { !$0.isNull } ?? false })
        {
            object["to"] = "preview"
            checked = .object(object)
        }
        let content = try MessageIntake.validate(checked).content
        let rows = try await postgres.query("SELECT apns_bundle_id FROM tenants WHERE id = $1::uuid", [tenant])
        let topic = try rows.first?.decode(String?.self, at: 0) ?? ""
        let request = APNsRequest(
            deviceToken: "", topic: topic, content: content, messageId: MessageRoutes.previewMessageId)
        var headers: [String: JSONValue] = [:]
        for field in request.headers(authorization: nil) where !(field.name == "apns-topic" && topic.isEmpty) {
            headers[field.name] = .string(field.value)
        }
        return .json([
            "payload": .string(String(decoding: request.payload, as: UTF8.self)),
            "size": .int(Int64(request.payload.count)), "maxSize": .int(Int64(PushPayload.maxBytes)),
            "headers": .object(headers), "messageId": .string(MessageRoutes.previewMessageId)
        ])
    }
}
