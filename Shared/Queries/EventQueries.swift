import BuzzKitWire
import Foundation

/// `GET /v1/subscribers/{id}/events?name=&since=&cursor=&limit=`: the events the ingest service
/// stored, read back for the gateway's route.
///
/// ```swift
/// let page = try await EventQueries.list(postgres: postgres, tenantId: tenant, subscriberId: id, name: q["name"],
///                                        since: q["since"], cursor: q["cursor"], limit: q["limit"])
/// return .json(page.jsonValue, metadata: page.metadata)          // data: [event], cursor, hasMore
/// ```
/// `list(tenantId:...)` builds the SQL alone (it throws `validation_failed` for a bad `since`,
/// `cursor` or `limit`) and `EventListQuery.page(rows:)` decodes its rows; `list(postgres:...)`
/// runs both. Newest first, keyset-paginated on (occurred_at, event_id). The subscriber's events
/// include those sent under any anonymous id aliased to it (before and after identify).
public enum EventQueries {
    /// Page size when `limit` is absent: 50. Largest accepted: 200.
    public static let defaultLimit = 50
    public static let maxLimit = 200

    /// Builds the query; throws `validation_failed` for a bad `since`, `cursor` or `limit`.
    /// - Parameters:
    ///   - since: ISO 8601; only events that happened at or after it.
    ///   - limit: text as it came in the query string (nil: 50).
    public static func list(
        tenantId: UUID, subscriberId: String, name: String? = nil, since: String? = nil,
        cursor: String? = nil, limit: String? = nil
    ) throws(APIError) -> EventListQuery {
        var issues: [ValidationIssue] = []
        var pageSize = defaultLimit
        if let limit {
            if let n = Int(limit), (1...maxLimit).contains(n) {
                pageSize = n
            } else {
                issues.append(ValidationIssue(path: "limit", message: "limit must be an integer from 1 to \(maxLimit)"))
            }
        }
        var sinceMicros: Int64?
        if let since, !since.isEmpty {
            sinceMicros = EventTimestamp.parseMicroseconds(since)
            if sinceMicros == nil {
                issues.append(
                    ValidationIssue(path: "since", message: "since must be an ISO 8601 date-time with an offset"))
            }
        }
        var position: EventCursor?
        if let cursor, !cursor.isEmpty {
            position = EventCursor(encoded: cursor)
            if position == nil {
                issues.append(ValidationIssue(path: "cursor", message: "cursor is not one this API returned"))
            }
        }
        guard issues.isEmpty else {
            throw APIError(.validationFailed, "invalid query parameters", details: .array(issues.map(\.eventJSONValue)))
        }
        var parameters: [String?] = [tenantId.lowercasedText, subscriberId]
        var sql = """
            SELECT event_id, name, data::text, subscriber_id, anonymous_id,
                   (extract(epoch FROM occurred_at) * 1000000)::int8::text,
                   (extract(epoch FROM received_at) * 1000000)::int8::text
            FROM events
            WHERE tenant_id = $1::uuid
              AND subscriber_id = ANY (ARRAY(SELECT $2::text UNION ALL
                  SELECT anonymous_id FROM subscriber_aliases WHERE tenant_id = $1::uuid AND subscriber_id = $2::text))
            """
        if let name, !name.isEmpty {
            parameters.append(name)
            sql += "\n  AND name = $\(parameters.count)"
        }
        if let sinceMicros {
            parameters.append(String(sinceMicros))
            sql += "\n  AND occurred_at >= timestamptz 'epoch' + $\(parameters.count)::int8 * interval '1 microsecond'"
        }
        if let position {
            parameters.append(String(position.micros))
            parameters.append(position.eventId)
            sql +=
                "\n  AND (occurred_at, event_id) < (timestamptz 'epoch' + $\(parameters.count - 1)::int8 * interval '1 microsecond', $\(parameters.count)::text)"
        }
        parameters.append(String(pageSize + 1))
        sql += "\nORDER BY occurred_at DESC, event_id DESC\nLIMIT $\(parameters.count)"
        return EventListQuery(sql: sql, parameters: parameters, limit: pageSize)
    }
}

/// A built `EventQueries.list` query: run `sql` with `parameters` (all text or NULL), then decode.
public struct EventListQuery: Sendable {
    public var sql: String
    public var parameters: [String?]
    public var limit: Int

    /// Decodes the result rows, each row its columns as text (NULL as nil).
    public func page(rows: [[String?]]) throws(APIError) -> EventPage {
        var events: [StoredEvent] = []
        for row in rows.prefix(limit) {
            guard row.count >= 7, let id = row[0], let name = row[1], let subscriber = row[3],
                let occurred = row[5].flatMap({ Int64($0) }), let received = row[6].flatMap({ Int64($0) })
            else { throw APIError(.internalError, "unexpected event row") }
            let data = row[2].flatMap { try? JSONValue.parse($0) } ?? [:]
            events.append(
                StoredEvent(
                    id: id, name: name, data: data, subscriberId: subscriber, anonymousId: row[4],
                    timestampMicroseconds: occurred, receivedAtMicroseconds: received))
        }
        let next =
            rows.count > limit
            ? events.last.map { EventCursor(micros: $0.timestampMicroseconds, eventId: $0.id).encoded } : nil
        return EventPage(events: events, nextCursor: next)
    }
}

/// An event as read back from the store.
public struct StoredEvent: Sendable, Hashable {
    public var id: String
    public var name: String
    public var data: JSONValue
    public var subscriberId: String
    public var anonymousId: String?
    public var timestampMicroseconds: Int64
    public var receivedAtMicroseconds: Int64

    /// `{"id","name","data","timestamp","receivedAt","subscriberId","anonymousId"}`.
    public var jsonValue: JSONValue {
        [
            "id": .string(id), "name": .string(name), "data": data,
            "timestamp": .string(EventTimestamp.format(microseconds: timestampMicroseconds)),
            "receivedAt": .string(EventTimestamp.format(microseconds: receivedAtMicroseconds)),
            "subscriberId": .string(subscriberId), "anonymousId": anonymousId.map(JSONValue.string) ?? .null
        ]
    }
}

/// One page of a subscriber's events, newest first.
public struct EventPage: Sendable, Hashable {
    public var events: [StoredEvent]
    /// Pass as `cursor` for the next (older) page; nil on the last page.
    public var nextCursor: String?

    public var hasMore: Bool { nextCursor != nil }
    /// The envelope's `data`: an array of events.
    public var jsonValue: JSONValue { .array(events.map(\.jsonValue)) }
    /// The envelope's pagination metadata: `cursor` (or null) and `hasMore`.
    public var metadata: [String: JSONValue] {
        ["cursor": nextCursor.map(JSONValue.string) ?? .null, "hasMore": .bool(hasMore)]
    }
}

/// The keyset position (occurred_at µs, event id), opaque to clients (base64url).
struct EventCursor: Hashable {
    var micros: Int64
    var eventId: String

    init(micros: Int64, eventId: String) {
        self.micros = micros
        self.eventId = eventId
    }

    init?(encoded: String) {
        var base64 = encoded.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64) else { return nil }
        let text = String(decoding: data, as: UTF8.self)
        guard let colon = text.firstIndex(of: ":"), let micros = Int64(text[..<colon]) else { return nil }
        self.init(micros: micros, eventId: String(text[text.index(after: colon)...]))
    }

    var encoded: String {
        Data("\(micros):\(eventId)".utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
