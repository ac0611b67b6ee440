import Foundation

/// An IPv4 or IPv6 address as its bytes (4 or 16), with what kind of network it belongs to.
public struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == 4 || bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// Reads a dotted IPv4 address or an IPv6 address (no brackets); nil for anything else.
    public init?(text: String) {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            bytes = withUnsafeBytes(of: &v4) { Array($0) }
            return
        }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 {
            bytes = withUnsafeBytes(of: &v6) { Array($0) }
            return
        }
        return nil
    }

    public var isV4: Bool { bytes.count == 4 }

    public var description: String {
        var buffer = [CChar](repeating: 0, count: 64)
        var copy = bytes
        let family = isV4 ? AF_INET : AF_INET6
        let written = copy.withUnsafeMutableBytes {
            inet_ntop(family, $0.baseAddress, &buffer, socklen_t(buffer.count))
        }
        guard written != nil else { return "?" }
        return String(cString: buffer)
    }

    /// For URLs and CURLOPT_RESOLVE: an IPv6 address in brackets.
    public var bracketed: String { isV4 ? description : "[\(description)]" }

    /// The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible or NAT64
    /// (`64:ff9b::a.b.c.d`) IPv6 address: what a connection to it would reach.
    public var embeddedV4: IPAddress? {
        guard bytes.count == 16 else { return nil }
        let mapped = bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
        let nat64 = bytes[0..<12] == [0x00, 0x64, 0xFF, 0x9B, 0, 0, 0, 0, 0, 0, 0, 0]
        let compatible =
            bytes[0..<12].allSatisfy { $0 == 0 } && !(bytes[12...].allSatisfy { $0 == 0 })
            && !(bytes[12..<15].allSatisfy { $0 == 0 } && bytes[15] == 1)
        guard mapped || nat64 || compatible else { return nil }
        return IPAddress(bytes: Array(bytes[12..<16]))
    }

    /// The kind of network an address belongs to.
    public enum Scope: String, Sendable, Hashable {
        case publicInternet = "public"
        case loopback, `private`
        case linkLocal = "link-local"
        case metadata = "cloud metadata"
        case unspecified, multicast, reserved
    }

    public var scope: Scope {
        if let inner = embeddedV4 { return inner.scope }
        let b = bytes
        if isV4 {
            if b == [169, 254, 169, 254] || b == [100, 100, 100, 200] || b == [192, 0, 0, 192] { return .metadata }
            switch b[0] {
            case 0: return .unspecified
            case 10: return .private
            case 127: return .loopback
            case 100 where b[1] & 0xC0 == 64: return .private  // 100.64.0.0/10, shared address space
            case 169 where b[1] == 254: return .linkLocal
            case 172 where b[1] & 0xF0 == 16: return .private
            case 192 where b[1] == 168: return .private
            case 192 where b[1] == 0 && (b[2] == 0 || b[2] == 2): return .reserved  // 192.0.0/24, TEST-NET-1
            case 198 where b[1] & 0xFE == 18: return .reserved  // benchmarking 198.18/15
            case 198 where b[1] == 51 && b[2] == 100, 203 where b[1] == 0 && b[2] == 113: return .reserved
            case 224...239: return .multicast
            case 240...255: return .reserved
            default: return .publicInternet
            }
        }
        // fd00:ec2::254, AWS's metadata service over IPv6.
        if b == [0xFD, 0x00, 0x0E, 0xC2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54] { return .metadata }
        if b.allSatisfy({ $0 == 0 }) { return .unspecified }
        if b[0..<15].allSatisfy({ $0 == 0 }) && b[15] == 1 { return .loopback }
        if b[0] == 0xFE && b[1] & 0xC0 == 0x80 { return .linkLocal }  // fe80::/10
        if b[0] & 0xFE == 0xFC { return .private }  // fc00::/7
        if b[0] == 0xFE && b[1] & 0xC0 == 0xC0 { return .private }  // fec0::/10, deprecated site-local
        if b[0] == 0xFF { return .multicast }
        if b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0D && b[3] == 0xB8 { return .reserved }  // documentation
        if b[0] == 0x01 && b[1..<8].allSatisfy({ $0 == 0 }) { return .reserved }  // 100::/64 discard
        return .publicInternet
    }
}
