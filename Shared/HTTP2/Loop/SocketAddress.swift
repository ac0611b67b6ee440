import BuzzKitCore
internal import CNghttp2
import Foundation

/// An IPv4 or IPv6 socket address as bytes (a `sockaddr_in` or `sockaddr_in6`), so it can cross
/// from the resolver thread to the loop.
struct SocketAddress: Sendable {
    var bytes: [UInt8]
    var family: Int32

    /// The address when `host` is an IP literal (no resolution needed), else nil.
    static func literal(_ host: String, port: Int) -> SocketAddress? {
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
            return SocketAddress(bytes: withUnsafeBytes(of: &v4) { Array($0) }, family: AF_INET)
        }
        var v6 = sockaddr_in6()
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if inet_pton(AF_INET6, bare, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
            return SocketAddress(bytes: withUnsafeBytes(of: &v6) { Array($0) }, family: AF_INET6)
        }
        return nil
    }

    /// Resolves `host` with getaddrinfo, which blocks: on a short-lived thread of its own, never
    /// on the loop or the cooperative pool. `done` gets the first address.
    static func resolve(
        _ host: String, port: Int, _ done: @escaping @Sendable (Result<SocketAddress, HTTP2Error>) -> Void
    ) {
        NamedThread.start("bk-h2-resolve") {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            hints.ai_family = AF_UNSPEC
            var list: UnsafeMutablePointer<addrinfo>?
            let status = getaddrinfo(host, String(port), &hints, &list)
            defer { if let list { freeaddrinfo(list) } }
            guard status == 0, let first = list, let address = first.pointee.ai_addr else {
                let text = status == 0 ? "no address" : String(cString: gai_strerror(status))
                done(.failure(HTTP2Error(.connectFailed, "cannot resolve \(host): \(text)")))
                return
            }
            let bytes = Array(UnsafeRawBufferPointer(start: address, count: Int(first.pointee.ai_addrlen)))
            done(.success(SocketAddress(bytes: bytes, family: first.pointee.ai_family)))
        }
    }
}
