import BuzzKitWire
import Foundation
import Synchronization

/// A structured logger shaped like apple/swift-log, writing one JSON object per line.
///
/// Passed in, never created inside library code. Messages are constant strings; data goes in
/// dotted metadata keys (`request.id`, `message.id`, `tenant`). Never log a secret: an API key, a
/// JWT, a p8 key or a whole device token.
public struct Logger: Sendable {
    public enum Level: Int, Sendable, Comparable, CaseIterable {
        case trace, debug, info, notice, warning, error, critical

        public var name: String {
            switch self {
            case .trace: "trace"
            case .debug: "debug"
            case .info: "info"
            case .notice: "notice"
            case .warning: "warning"
            case .error: "error"
            case .critical: "critical"
            }
        }

        public init?(name: String) {
            guard let level = Level.allCases.first(where: { $0.name == name.lowercased() }) else { return nil }
            self = level
        }

        public static func < (a: Level, b: Level) -> Bool { a.rawValue < b.rawValue }
    }

    public var label: String
    public var logLevel: Level
    public var metadata: [String: String]
    private let sink: any LogSink

    public init(label: String, logLevel: Level = .info, sink: any LogSink = StandardOutputSink.shared) {
        self.label = label
        self.logLevel = logLevel
        self.metadata = [:]
        self.sink = sink
    }

    /// A logger that discards everything (tests and tools that want silence).
    public static func silent(label: String = "silent") -> Logger {
        Logger(label: label, logLevel: .critical, sink: DiscardingSink())
    }

    public subscript(metadataKey key: String) -> String? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// A copy with extra metadata on every line.
    public func with(_ extra: [String: String]) -> Logger {
        var copy = self
        copy.metadata.merge(extra) { _, new in new }
        return copy
    }

    public func log(_ level: Level, _ message: @autoclosure () -> String, metadata extra: [String: String] = [:]) {
        guard level >= logLevel else { return }
        var writer = LogLineWriter()
        writer.member("ts", Self.timestamp())
        writer.member("level", level.name)
        writer.member("logger", label)
        writer.member("msg", message())
        for (key, value) in metadata where extra[key] == nil { writer.member(key, value) }
        for (key, value) in extra { writer.member(key, value) }
        sink.write(writer.finish())
    }

    public func trace(_ m: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.trace, m(), metadata: metadata)
    }
    public func debug(_ m: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.debug, m(), metadata: metadata)
    }
    public func info(_ m: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.info, m(), metadata: metadata)
    }
    public func notice(_ m: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.notice, m(), metadata: metadata)
    }
    public func warning(_ m: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.warning, m(), metadata: metadata)
    }
    public func error(_ m: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.error, m(), metadata: metadata)
    }
    public func critical(_ m: @autoclosure () -> String, metadata: [String: String] = [:]) {
        log(.critical, m(), metadata: metadata)
    }

    private static func timestamp() -> String {
        Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}

/// Where log lines go. One line per call, without the trailing newline.
public protocol LogSink: Sendable {
    func write(_ line: String)
}

/// Writes lines to standard output, whole lines at a time even from many threads.
public final class StandardOutputSink: LogSink {
    public static let shared = StandardOutputSink()
    private let lock = Mutex(())

    public func write(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.append(0x0A)
        lock.withLock { _ in
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let n = Foundation.write(1, buffer.baseAddress! + offset, buffer.count - offset)
                    if n <= 0 { break }
                    offset += n
                }
            }
        }
    }
}

/// Keeps lines in memory, for tests that assert on logs.
public final class CapturingSink: LogSink {
    private let lines = Mutex<[String]>([])
    public init() {}
    public func write(_ line: String) { lines.withLock { $0.append(line) } }
    public var captured: [String] { lines.withLock { $0 } }
}

struct DiscardingSink: LogSink {
    func write(_ line: String) {}
}

/// Builds one flat JSON object of string members.
struct LogLineWriter {
    private var writer = JSONWriter(capacity: 160)
    private var first = true

    init() { writer.raw("{") }

    mutating func member(_ key: String, _ value: String) {
        if !first { writer.raw(",") }
        first = false
        writer.string(key)
        writer.raw(":")
        writer.string(value)
    }

    mutating func finish() -> String {
        writer.raw("}")
        return writer.string
    }
}
