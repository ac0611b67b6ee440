import BuzzKitWire

extension ErrorCode {
    /// A request the SDK could not even build (its base URL and path make no URL): answered by the
    /// SDK itself with status 0, never sent, so not one of the server's codes (`ErrorCode.all`).
    static let badRequest = ErrorCode("bad_request", httpStatus: 400)
}
