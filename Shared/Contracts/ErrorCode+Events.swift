import BuzzKitWire

/// Error codes of the event routes (`POST /v1/events`, `GET /v1/subscribers/{id}/events`).
/// Add them to the API's list (`ErrorCode.all` / OpenAPI) when the routes are wired.
extension ErrorCode {
    /// More than 100 events in one batch (422; distinct from `payload_too_large`, which is about bytes).
    /// `details`: `{"limit": 100, "count": n}`.
    public static let batchTooLarge = ErrorCode("batch_too_large", httpStatus: 422)
    /// The batch could not be queued (Redis unreachable). Nothing was accepted: retry (503).
    public static let ingestUnavailable = ErrorCode("ingest_unavailable", httpStatus: 503)

    /// The codes above, for the API's code list.
    public static let eventCodes: [ErrorCode] = [.batchTooLarge, .ingestUnavailable]
}
