/// The APNs priority of a push (`apns-priority`): `high` (10) delivers at once, `normal` (5) lets
/// the device batch it to save power. Default: high for visible notifications, normal for silent
/// pushes (APNs rejects a background push with priority 10).
public enum PushPriority: Int, Sendable, Hashable, CaseIterable {
    case normal = 5
    case high = 10

    /// `"high"`, `"normal"`, `10` or `5`.
    public init?(json: JSONValue) {
        switch json {
        case .string("high"): self = .high
        case .string("normal"): self = .normal
        case .int(10): self = .high
        case .int(5): self = .normal
        default: return nil
        }
    }

    public var name: String { self == .high ? "high" : "normal" }
}
