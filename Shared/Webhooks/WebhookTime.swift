import BuzzKitWire
import Foundation

/// Times as webhooks and their API write them: ISO 8601 in UTC with milliseconds
/// (`2026-12-04T21:48:11.123Z`).
public enum WebhookTime {
    public static func text(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    public static func json(_ date: Date?) -> JSONValue { date.map { .string(text($0)) } ?? .null }
}
