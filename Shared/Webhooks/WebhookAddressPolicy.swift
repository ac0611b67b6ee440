import BuzzKitCore
import Foundation
import Synchronization

/// Where an endpoint may lead (the SSRF rules), checked when it is saved and again before every
/// send, on the addresses its host resolves to then; the send connects to exactly those.
///
/// Refused unless `allowPrivate` (`BUZZKIT_WEBHOOKS_ALLOW_PRIVATE=true`, which also allows
/// `http://`): loopback, private (RFC 1918, 100.64/10, fc00::/7), link-local, unspecified,
/// multicast and reserved addresses, and IPv6 forms that embed such an IPv4 address. Always
/// refused, whatever the setting: the cloud metadata services (169.254.169.254, fd00:ec2::254,
/// 100.100.100.200, 192.0.0.192, metadata.google.internal), which no webhook has reason to reach.
public struct WebhookAddressPolicy: Sendable, Hashable {
    public var allowPrivate: Bool

    public init(allowPrivate: Bool) { self.allowPrivate = allowPrivate }

    static let metadataNames: Set<String> = ["metadata.google.internal", "metadata.goog", "metadata"]

    /// The problem with a host name itself (before resolving), nil when it may be resolved.
    public func problem(name host: String) -> WebhookURLProblem? {
        if Self.metadataNames.contains(host) { return WebhookURLProblem("\(host) is a cloud metadata service") }
        if !allowPrivate && (host == "localhost" || host.hasSuffix(".localhost")) {
            return WebhookURLProblem("\(host) is this machine (a loopback address)")
        }
        return nil
    }

    /// The problem with `addresses` (all of what the host resolves to), nil when every one is allowed.
    public func problem(host: String, addresses: [IPAddress]) -> WebhookURLProblem? {
        guard !addresses.isEmpty else { return WebhookURLProblem("\(host) does not resolve to any address") }
        for address in addresses {
            let scope = address.scope
            if scope == .metadata {
                return WebhookURLProblem("\(host) resolves to \(address), a cloud metadata service")
            }
            if scope != .publicInternet && !allowPrivate {
                return WebhookURLProblem(
                    "\(host) resolves to \(address), a \(scope.rawValue) address (refused unless the operator sets BUZZKIT_WEBHOOKS_ALLOW_PRIVATE=true)"
                )
            }
        }
        return nil
    }
}

/// Resolves host names with `getaddrinfo` on threads of its own (a lookup blocks, for seconds
/// when DNS is slow: never on Swift's cooperative pool), and applies `WebhookAddressPolicy`.
public final class WebhookHostResolver: Sendable {
    private let threads: [WorkerThread]
    private let next = Atomic<Int>(0)

    /// - Parameter threads: lookups that may block at once (default 4).
    public init(threads count: Int = 4) {
        threads = (0..<max(1, count)).map { WorkerThread(name: "bk-resolve-\($0)") }
    }

    /// Stops the threads (lookups under way finish first).
    public func shutdown() { for thread in threads { thread.stop() } }

    /// The addresses `url` leads to, checked by `policy`; an IP literal is checked as it is.
    public func check(_ url: WebhookURL, policy: WebhookAddressPolicy) async -> Result<[IPAddress], WebhookURLProblem> {
        if let literal = url.literal {
            if let problem = policy.problem(host: url.host, addresses: [literal]) { return .failure(problem) }
            return .success([literal])
        }
        if let problem = policy.problem(name: url.host) { return .failure(problem) }
        let addresses: [IPAddress]
        do {
            addresses = try await resolve(url.host)
        } catch {
            return .failure(WebhookURLProblem("\(url.host) does not resolve: \(error)"))
        }
        if let problem = policy.problem(host: url.host, addresses: addresses) { return .failure(problem) }
        return .success(addresses)
    }

    /// Every address `host` resolves to, IPv4 and IPv6, without duplicates, in the resolver's order.
    public func resolve(_ host: String) async throws -> [IPAddress] {
        let thread = threads[next.add(1, ordering: .relaxed).oldValue % threads.count]
        return try await thread.run(orThrow: { WebhookURLProblem("the resolver was stopped") }) {
            try Self.lookup(host)
        }
    }

    static func lookup(_ host: String) throws -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0 else { throw WebhookURLProblem(String(cString: gai_strerror(status))) }
        defer { freeaddrinfo(list) }
        var found: [IPAddress] = []
        var cursor = list
        while let info = cursor {
            if let address = info.pointee.ai_addr {
                var bytes: [UInt8] = []
                if info.pointee.ai_family == AF_INET {
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                        var raw = v4.pointee.sin_addr
                        bytes = withUnsafeBytes(of: &raw) { Array($0) }
                    }
                } else if info.pointee.ai_family == AF_INET6 {
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                        var raw = v6.pointee.sin6_addr
                        bytes = withUnsafeBytes(of: &raw) { Array($0) }
                    }
                }
                if let ip = IPAddress(bytes: bytes), !found.contains(ip) { found.append(ip) }
            }
            cursor = info.pointee.ai_next
        }
        return found
    }
}
