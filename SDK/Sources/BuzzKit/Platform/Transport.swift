import Foundation

/// One HTTP request the SDK makes to the BuzzKit API.
public struct TransportRequest: Sendable, Hashable {
    public var method: String
    public var url: URL
    public var headers: [String: String]
    public var body: [UInt8]

    public init(method: String, url: URL, headers: [String: String] = [:], body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// What the server answered: any status counts as an answer (even 4xx/5xx).
public struct TransportResponse: Sendable, Hashable {
    public var status: Int
    public var body: [UInt8]

    public init(status: Int, body: [UInt8] = []) {
        self.status = status
        self.body = body
    }
}

/// HTTP as the SDK needs it. Throw for a network failure (no answer: offline, timeout, reset);
/// return a response for anything the server answered. The queue's rules depend on the
/// difference: a network failure keeps a batch and counts an attempt, an API error drops it.
///
/// `URLSessionTransport` is the real one; tests use fakes, or `URLSessionTransport` against a
/// running gateway.
public protocol Transport: Sendable {
    func send(_ request: TransportRequest) async throws -> TransportResponse
}

/// A network failure as the SDK reports it (no answer from the server).
public struct TransportError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { "network failure: \(message)" }
}
