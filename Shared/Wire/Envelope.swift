/// The response envelope every API response uses: `{success, data, error, metadata}`.
///
/// `metadata` always has `requestId`; lists add `cursor` and `hasMore`; idempotent replays add
/// `replayed`. Written with `JSONWriter`, so building a response costs microseconds.
public struct Envelope: Sendable, Equatable {
    public var data: JSONValue?
    public var error: APIError?
    public var metadata: [String: JSONValue]

    public var success: Bool { error == nil }

    public static func success(_ data: JSONValue?, metadata: [String: JSONValue] = [:]) -> Envelope {
        Envelope(data: data, error: nil, metadata: metadata)
    }

    public static func failure(_ error: APIError, metadata: [String: JSONValue] = [:]) -> Envelope {
        Envelope(data: nil, error: error, metadata: metadata)
    }

    /// The JSON bytes, with `requestId` put into `metadata`.
    public func encoded(requestId: String) -> [UInt8] {
        write(requestId: requestId, capacity: 128) { $0.value(data ?? .null) }
    }

    /// The bytes `Envelope.success(data).encoded(requestId:)` writes, around `data` that is
    /// already encoded (one valid JSON value, spliced in as it is: a hot route's database text).
    public static func encodedSuccess(encodedData data: [UInt8], requestId: String) -> [UInt8] {
        Envelope.success(nil).write(requestId: requestId, capacity: data.count + 96) { $0.rawBytes(data) }
    }

    private func write(requestId: String, capacity: Int, data writeData: (inout JSONWriter) -> Void) -> [UInt8] {
        var writer = JSONWriter(capacity: capacity)
        writer.raw("{\"success\":")
        writer.bool(success)
        writer.raw(",\"data\":")
        writeData(&writer)
        writer.raw(",\"error\":")
        if let error {
            writer.raw("{\"code\":")
            writer.string(error.code.rawValue)
            writer.raw(",\"message\":")
            writer.string(error.message)
            writer.raw(",\"details\":")
            writer.value(error.details ?? .null)
            writer.raw("}")
        } else {
            writer.raw("null")
        }
        var meta = metadata
        meta["requestId"] = .string(requestId)
        writer.raw(",\"metadata\":")
        writer.value(.object(meta))
        writer.raw("}")
        return writer.bytes
    }

    /// Reads an envelope back (clients, tests, the SDK).
    public static func decode(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> Envelope {
        let value = try JSONValue.parse(bytes)
        guard case .object(let o) = value, let success = o["success"]?.boolValue else {
            throw JSONParseError(description: "not a BuzzKit envelope")
        }
        var error: APIError?
        if !success, let e = o["error"]?.objectValue, let code = e["code"]?.stringValue {
            let known = ErrorCode.all.first { $0.rawValue == code }
            error = APIError(
                known ?? ErrorCode(code, httpStatus: 0), e["message"]?.stringValue ?? "",
                details: e["details"].flatMap(Self.nonNull))
        }
        let data = o["data"].flatMap(Self.nonNull)
        return Envelope(data: data, error: error, metadata: o["metadata"]?.objectValue ?? [:])
    }

    /// JSON `null` as Swift's `nil` (a bare `nil` literal would become `JSONValue.null`).
    private static func nonNull(_ value: JSONValue) -> JSONValue? {
        value.isNull ? Optional<JSONValue>.none : value
    }
}
