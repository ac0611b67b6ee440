import Foundation

/// One keep-alive HTTP/1.1 connection over a blocking socket, one request at a time: what
/// `post-messages` posts with. The load client's CPU shares the machine with the stack it
/// measures, so a request costs one `send` and a `recv` or two here (the libcurl client through
/// Swift tasks cost 56 µs of CPU a POST, this one 26-30).
/// Used from one thread only.
final class KeepAliveConnection {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// An answer: its status and body.
    struct Answer {
        var status: Int
        var body: [UInt8]
    }

    private let socket: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    private var chunk = [UInt8](repeating: 0, count: 4096)

    /// Connects to `host` (an IPv4 address) on `port`.
    init(host: String, port: UInt16) throws {
        socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "socket: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(socket)
            throw Failure(description: "not an IPv4 address: \(host)")
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(socket)
            throw Failure(description: "connect to \(host):\(port): errno \(errno)")
        }
        buffer.reserveCapacity(4096)
    }

    deinit { close(socket) }

    /// Sends `request` (a whole HTTP/1.1 request) and reads its answer (`Content-Length` framed).
    func exchange(_ request: [UInt8]) throws -> Answer {
        var sent = 0
        while sent < request.count {
            let n = request.withUnsafeBytes { send(socket, $0.baseAddress! + sent, request.count - sent, 0) }
            guard n > 0 else { throw Failure(description: "send: errno \(errno)") }
            sent += n
        }
        var headerEnd = try headEnd()
        while headerEnd == nil {
            try fill()
            headerEnd = try headEnd()
        }
        let head = buffer[start..<headerEnd!]
        guard let status = Self.status(head) else {
            throw Failure(description: "not an HTTP answer: \(String(decoding: head.prefix(80), as: UTF8.self))")
        }
        let length = Self.contentLength(head) ?? 0
        let bodyStart = headerEnd! + 4
        while buffer.count - bodyStart < length { try fill() }
        let body = Array(buffer[bodyStart..<(bodyStart + length)])
        start = bodyStart + length
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        return Answer(status: status, body: body)
    }

    /// Where the head ends (`\r\n\r\n`) in what has been read, if it has.
    private func headEnd() throws -> Int? {
        guard buffer.count - start >= 4 else { return nil }
        var i = start
        while i + 3 < buffer.count {
            if buffer[i] == 13, buffer[i + 1] == 10, buffer[i + 2] == 13, buffer[i + 3] == 10 { return i }
            i += 1
        }
        return nil
    }

    private func fill() throws {
        let n = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress!, 4096, 0) }
        guard n > 0 else {
            throw Failure(description: n == 0 ? "the server closed the connection" : "recv: errno \(errno)")
        }
        buffer.append(contentsOf: chunk[0..<n])
    }

    /// `HTTP/1.1 202 Accepted` → 202.
    static func status(_ head: ArraySlice<UInt8>) -> Int? {
        guard let space = head.firstIndex(of: 32), head.distance(from: space, to: head.endIndex) > 3 else { return nil }
        var value = 0
        for byte in head[(space + 1)..<(space + 4)] {
            guard byte >= 48, byte <= 57 else { return nil }
            value = value * 10 + Int(byte - 48)
        }
        return value
    }

    /// The `Content-Length` header's value (any case).
    static func contentLength(_ head: ArraySlice<UInt8>) -> Int? {
        let name = Array("content-length:".utf8)
        var lineStart = head.startIndex
        while lineStart < head.endIndex {
            let lineEnd = head[lineStart...].firstIndex(of: 13) ?? head.endIndex
            let line = head[lineStart..<lineEnd]
            if line.count > name.count, zip(line, name).allSatisfy({ ($0 | 0x20) == $1 || $0 == $1 }) {
                var value = 0
                for byte in line.dropFirst(name.count) where byte >= 48 && byte <= 57 {
                    value = value * 10 + Int(byte - 48)
                }
                return value
            }
            lineStart = lineEnd + 2
        }
        return nil
    }
}
