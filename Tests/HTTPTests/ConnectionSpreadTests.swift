import BuzzKitHTTPServer
import Foundation
import Testing

/// New connections go to the network threads in turn, so a client with a few keep-alive
/// connections (a proxy, a load generator) gets every thread, not whichever won a race to accept.
@Suite struct ConnectionSpreadTests {
    @Test func connectionsAreSharedEquallyByTheNetworkThreads() async throws {
        try await withServer(
            configuration: .init(workerThreads: 2),
            routes: { router in
                // Answered on the network thread itself: the body names that thread.
                router.get("/thread", sync: { _ in .text(String(UInt(bitPattern: Int(bitPattern: pthread_self())))) })
            }
        ) { server, _ in
            let threads = try await servingThreads(port: server.port, connections: 8)
            let perThread = Dictionary(grouping: threads, by: { $0 }).mapValues(\.count)
            #expect(perThread.count == 2, "\(perThread)")
            #expect(perThread.values.allSatisfy { $0 == 4 }, "\(perThread)")
        }
    }

    /// Opens `connections` TCP connections one after the other, then asks `/thread` on each; the
    /// blocking socket calls run on a thread of their own, not the cooperative pool.
    private func servingThreads(port: Int, connections: Int) async throws -> [String] {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try Self.ask(port: port, connections: connections) })
            }.start()
        }
    }

    private static func ask(port: Int, connections: Int) throws -> [String] {
        struct SocketError: Error { var step: String }
        var sockets: [Int32] = []
        defer { for fd in sockets { close(fd) } }
        for _ in 0..<connections {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard fd >= 0 else { throw SocketError(step: "socket") }
            sockets.append(fd)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard connected == 0 else { throw SocketError(step: "connect") }
        }
        return try sockets.map { fd in
            let request = Array("GET /thread HTTP/1.1\r\nHost: localhost\r\n\r\n".utf8)
            guard send(fd, request, request.count, 0) == request.count else { throw SocketError(step: "send") }
            var response: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            // Read until the whole body (Content-Length) is in.
            while true {
                let count = recv(fd, &buffer, buffer.count, 0)
                guard count > 0 else { throw SocketError(step: "recv") }
                response += buffer[0..<count]
                let text = String(decoding: response, as: UTF8.self)
                guard let split = text.range(of: "\r\n\r\n") else { continue }
                let head = text[..<split.lowerBound].lowercased()
                guard let lengthLine = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                    let length = Int(lengthLine.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
                else {
                    throw SocketError(step: "content-length")
                }
                let body = text[split.upperBound...]
                if body.utf8.count >= length { return String(body) }
            }
        }
    }
}
