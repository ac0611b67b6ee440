import Foundation

/// One log line from the SDK: a constant message plus metadata (never an API key or a whole token).
public struct LogEntry: Sendable, Hashable {
    public enum Level: Int, Sendable, Hashable, Comparable {
        case debug, info, warning, error

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    public var level: Level
    public var message: String
    public var metadata: [String: String]

    public init(level: Level, message: String, metadata: [String: String] = [:]) {
        self.level = level
        self.message = message
        self.metadata = metadata
    }
}

/// Where the SDK's log lines go. Default: the unified log (`os.Logger`) on Apple platforms,
/// nowhere on Linux; tests capture them.
public typealias LogHandler = @Sendable (LogEntry) -> Void

struct SDKLogger: Sendable {
    let handler: LogHandler?

    func log(_ level: LogEntry.Level, _ message: String, _ metadata: [String: String] = [:]) {
        handler?(LogEntry(level: level, message: message, metadata: metadata))
    }
    func debug(_ message: String, _ metadata: [String: String] = [:]) { log(.debug, message, metadata) }
    func info(_ message: String, _ metadata: [String: String] = [:]) { log(.info, message, metadata) }
    func warning(_ message: String, _ metadata: [String: String] = [:]) { log(.warning, message, metadata) }
    func error(_ message: String, _ metadata: [String: String] = [:]) { log(.error, message, metadata) }

    static func defaultHandler() -> LogHandler? {
        #if canImport(os)
            return OSLogHandler.handler
        #else
            return nil
        #endif
    }
}
