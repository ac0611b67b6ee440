import BuzzKitCrypto
import BuzzKitHTTPServer
import BuzzKitWire

/// Keyset pagination: `?cursor=&limit=`. The cursor is opaque to clients (base64url of the last
/// row's sort key), so the order key can change without breaking them. Pages are stable under
/// concurrent inserts: every row that exists for the whole walk is returned exactly once.
/// `limit` defaults to 50, at most 200. Lists answer `metadata.cursor` (null on the last page)
/// and `metadata.hasMore`.
struct Page {
    static let defaultLimit = 50
    static let maxLimit = 200

    var after: String?
    var limit: Int

    /// Reads `cursor` and `limit`; both problems reported at once.
    init(_ request: Request) throws(APIError) {
        var issues: [ValidationIssue] = []
        limit = Self.defaultLimit
        if let raw = request.query["limit"] {
            if let value = Int(raw), (1...Self.maxLimit).contains(value) {
                limit = value
            } else {
                issues.append(ValidationIssue(path: "limit", message: "must be an integer from 1 to \(Self.maxLimit)"))
            }
        }
        if let raw = request.query["cursor"], !raw.isEmpty {
            if let bytes = Base64URL.decode(raw), let text = String(validating: bytes, as: UTF8.self),
                text.hasPrefix("k:")
            {
                after = String(text.dropFirst(2))
            } else {
                issues.append(ValidationIssue(path: "cursor", message: "is not a cursor this API returned"))
            }
        }
        try Validator.throwIfAny(issues)
    }

    static func cursor(for key: String) -> String { Base64URL.encode(Array(("k:" + key).utf8)) }

    /// The cursor of a list ordered by a positive bigint id (newest first), nil on the first page:
    /// a cursor that decodes but holds no such id is refused like any other foreign cursor.
    func idCursor() throws(APIError) -> Int64? {
        guard let after else { return nil }
        guard let id = Int64(after), id > 0 else {
            try Validator.throwIfAny([ValidationIssue(path: "cursor", message: "is not a cursor this API returned")])
            return nil
        }
        return id
    }

    /// The list response. `rows` was fetched with `limit + 1` rows to learn whether more exist.
    func response(_ rows: [[String: JSONValue]], key: (([String: JSONValue]) -> String)) -> Response {
        let hasMore = rows.count > limit
        let page = Array(rows.prefix(limit))
        let cursor: JSONValue = hasMore ? page.last.map { .string(Self.cursor(for: key($0))) } ?? .null : .null
        return .json(.array(page.map(JSONValue.object)), metadata: ["cursor": cursor, "hasMore": .bool(hasMore)])
    }
}

/// How the document states `cursor`: opaque base64url, valid only as a list returned it.
enum PageCursor {
    static let description = """
        metadata.cursor of the previous page of this list, or empty for the first page. Opaque: any other value is \
        422 validation_failed (format buzzkit-cursor: only values this API returned)
        """
    static let schema = Schema.custom(format: "buzzkit-cursor", description, example: "")
}
