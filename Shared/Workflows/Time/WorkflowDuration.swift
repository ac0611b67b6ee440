/// A wait's length as a definition writes it: a positive whole number and one unit, `"30s"`,
/// `"90m"`, `"36h"`, `"7d"`. At most `maxSeconds` (365 days), so a forgotten run cannot wait for
/// years. The text is kept as written (it is what the canonical definition shows).
public struct WorkflowDuration: Sendable, Hashable, CustomStringConvertible {
    /// 365 days.
    public static let maxSeconds: Int64 = 365 * 86_400

    public let text: String
    public let seconds: Int64

    /// Nil for anything but `<digits><s|m|h|d>` with no leading zero, or over 365 days.
    public init?(_ text: String) {
        guard let unit = text.last, text.count >= 2, text.count <= 12 else { return nil }
        let digits = text.dropLast()
        guard digits.first != "0", digits.allSatisfy({ $0 >= "0" && $0 <= "9" }), let n = Int64(digits) else {
            return nil
        }
        let factor: Int64
        switch unit {
        case "s": factor = 1
        case "m": factor = 60
        case "h": factor = 3600
        case "d": factor = 86_400
        default: return nil
        }
        guard n <= Self.maxSeconds / factor else { return nil }
        self.text = text
        self.seconds = n * factor
    }

    public var description: String { text }

    /// Why `text` is refused (for validation messages).
    static let rule =
        "must be a positive whole number followed by s, m, h or d (\"30s\", \"90m\", \"36h\", \"7d\"), at most 365 days"
}
