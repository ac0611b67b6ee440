import Foundation

/// Where and how to reach Redis. Parsed from `redis://[[user]:password@]host[:port][/db]`.
///
/// Defaults: port 6379, db 0, `poolSize` 4 connections, `connectTimeout` 2 s, `commandTimeout` 5 s
/// (the socket timeout; blocking reads add their BLOCK time on top). The password never appears in
/// `description` or in logs.
public struct RedisConfiguration: Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var username: String?
    public var password: String?
    public var database: Int
    /// How many pooled connections `RedisClient` opens at most (each has its own thread). Default 4.
    public var poolSize: Int
    /// Default 2 s.
    public var connectTimeout: Duration
    /// Socket timeout for one command or pipeline. Default 5 s.
    public var commandTimeout: Duration

    public init(
        host: String = "127.0.0.1", port: Int = 6379, username: String? = nil, password: String? = nil,
        database: Int = 0, poolSize: Int = 4, connectTimeout: Duration = .seconds(2),
        commandTimeout: Duration = .seconds(5)
    ) {
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.database = database
        self.poolSize = max(1, poolSize)
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
    }

    /// Parses `redis://[[user]:password@]host[:port][/db]`; other settings keep their defaults.
    public init(url: String) throws(RedisError) {
        guard let components = URLComponents(string: url), components.scheme == "redis" else {
            throw RedisError(.configuration, "expected redis://[:password@]host[:port][/db]")
        }
        guard let host = components.host, !host.isEmpty else {
            throw RedisError(.configuration, "the Redis URL has no host")
        }
        var database = 0
        let path = components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        if !path.isEmpty {
            guard let db = Int(path), db >= 0 else {
                throw RedisError(.configuration, "the Redis database must be a number")
            }
            database = db
        }
        let user = components.user.flatMap { $0.isEmpty ? nil : $0.removingPercentEncoding ?? $0 }
        let password = components.password.flatMap { $0.isEmpty ? nil : $0.removingPercentEncoding ?? $0 }
        self.init(host: host, port: components.port ?? 6379, username: user, password: password, database: database)
    }

    /// The URL with the password masked.
    public var description: String {
        var auth = ""
        if username != nil || password != nil {
            auth = "\(username ?? ""):\(password == nil ? "" : "***")@"
        }
        return "redis://\(auth)\(host):\(port)/\(database)"
    }

    var connectTimeoutMilliseconds: Int { Self.milliseconds(connectTimeout) }
    var commandTimeoutMilliseconds: Int { Self.milliseconds(commandTimeout) }

    static func milliseconds(_ d: Duration) -> Int {
        let (s, atto) = d.components
        return Int(s) * 1000 + Int(atto / 1_000_000_000_000_000)
    }
}
