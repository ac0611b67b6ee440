import Foundation

/// An endpoint's URL, read and checked as far as can be without the network: `https://` (or
/// `http://` when the operator allows private addresses), a host, no user name or password, no
/// fragment, at most `maxLength` characters. Where the host resolves is checked by
/// `WebhookAddressPolicy`, at save time and again before every send (DNS can change).
public struct WebhookURL: Sendable, Hashable {
    public static let maxLength = 2048

    /// The URL as given (what is stored and requested).
    public let text: String
    public let isHTTPS: Bool
    /// The host, lowercased, an IPv6 literal without its brackets.
    public let host: String
    public let port: Int
    /// The host is an IP address literal (no name to resolve).
    public let literal: IPAddress?

    /// Reads `text`; the problem in words when it is not a URL an endpoint may have.
    public static func parse(_ text: String, allowHTTP: Bool) -> Result<WebhookURL, WebhookURLProblem> {
        guard !text.isEmpty, text.count <= maxLength else {
            return .failure(.init("must be a URL of 1 to \(maxLength) characters"))
        }
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F || $0.value > 0x7E }) else {
            return .failure(
                .init("must be an absolute URL without spaces or non-ASCII characters (percent-encode them)"))
        }
        let lower = text.lowercased()
        let https = lower.hasPrefix("https://")
        guard https || lower.hasPrefix("http://") else {
            return .failure(.init(allowHTTP ? "must start with https:// or http://" : "must start with https://"))
        }
        guard https || allowHTTP else {
            return .failure(.init("must use https:// (http:// only where the operator allows private addresses)"))
        }
        guard let components = URLComponents(string: text), let rawHost = components.host, !rawHost.isEmpty else {
            return .failure(.init("must be an absolute URL with a host, such as https://example.com/webhooks"))
        }
        guard components.user == nil, components.password == nil else {
            return .failure(.init("must not carry a user name or password"))
        }
        guard components.fragment == nil else { return .failure(.init("must not have a #fragment")) }
        var host = rawHost.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.hasSuffix(".") { host.removeLast() }
        guard !host.isEmpty, host.utf8.count <= 253 else { return .failure(.init("must have a host name")) }
        let port = components.port ?? (https ? 443 : 80)
        guard (1...65535).contains(port) else { return .failure(.init("must have a port from 1 to 65535")) }
        let literal = IPAddress(text: host)
        if literal == nil {
            // A name: letters, digits, '-', '_' and dots (an internationalised name in its xn-- form).
            let allowed = host.utf8.allSatisfy {
                ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x2E || $0 == 0x5F
            }
            guard allowed, !host.hasPrefix("."), !host.contains("..") else {
                return .failure(.init("must have a valid host name or IP address"))
            }
        }
        return .success(WebhookURL(text: text, isHTTPS: https, host: host, port: port, literal: literal))
    }

    /// The CURLOPT_RESOLVE entry that pins a request to `addresses` (which were checked).
    public func pin(_ addresses: [IPAddress]) -> [String] {
        guard literal == nil, !addresses.isEmpty else { return [] }
        return ["\(host):\(port):" + addresses.map(\.bracketed).joined(separator: ",")]
    }
}

/// Why a URL is refused (the message of a `validation_failed` issue at `url`, or of a failed attempt).
public struct WebhookURLProblem: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
