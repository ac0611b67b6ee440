import BuzzKitWire

/// Error codes of installation tokens (client keys).
extension ErrorCode {
    /// A client-key request without the `BuzzKit-Installation` header (401): register first with
    /// `POST /v1/installations`.
    public static let installationRequired = ErrorCode("installation_required", httpStatus: 401)
    /// A client (SDK) key acting for an identity that is not its installation's (403): events,
    /// devices and identify share this code.
    public static let forbiddenInstallation = ErrorCode("forbidden_installation", httpStatus: 403)
    /// `POST /v1/installations` for an anonymous id that already has an installation (409).
    public static let installationExists = ErrorCode("installation_exists", httpStatus: 409)

    /// The codes above.
    public static let installationCodes: [ErrorCode] = [.installationRequired, .forbiddenInstallation, .installationExists]
}
