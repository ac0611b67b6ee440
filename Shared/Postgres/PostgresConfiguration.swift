import Foundation

/// Where and how to reach PostgreSQL, and how many connections to keep.
///
/// Parsed from a URL `postgres://user[:password]@host[:port]/database[?sslmode=...]` (the scheme
/// `postgresql://` works too). Defaults: port 5432, user `postgres`, database = user, `sslmode`
/// `prefer` (libpq's default), pool size 4, connect timeout 5 s, no statement timeout, application
/// name `buzzkit`. Every session runs with `TimeZone=UTC`, so timestamps come back in UTC.
///
/// Recognised URL query items: `sslmode`, `application_name`, `connect_timeout` (seconds),
/// `statement_timeout` (milliseconds), `pool_size`, `search_path` (comma separated) and `host` (a
/// Unix socket directory). An unknown item is an error, so a typo does not go unnoticed.
///
/// The password is never part of `description`; log the configuration freely.
public struct PostgresConfiguration: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String
    /// libpq `sslmode`: `disable`, `allow`, `prefer` (default), `require`, `verify-ca`, `verify-full`.
    public var sslMode: String
    /// Connections the pool opens at most. Default 4.
    public var poolSize: Int
    /// How long opening a connection may take. Default 5 s; libpq counts whole seconds, at least 2.
    public var connectTimeout: Duration
    /// Server-side limit for each statement (`statement_timeout`). Default: none.
    public var statementTimeout: Duration?
    /// Shown in `pg_stat_activity`. Default `buzzkit`.
    public var applicationName: String
    /// The session `search_path` (schemas in order), e.g. a test's own schema. Default: the server's.
    public var searchPath: [String]?

    public init(
        host: String = "127.0.0.1", port: Int = 5432, user: String = "postgres", password: String? = nil,
        database: String? = nil, sslMode: String = "prefer", poolSize: Int = 4,
        connectTimeout: Duration = .seconds(5), statementTimeout: Duration? = nil,
        applicationName: String = "buzzkit", searchPath: [String]? = nil
    ) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database ?? user
        self.sslMode = sslMode
        self.poolSize = poolSize
        self.connectTimeout = connectTimeout
        self.statementTimeout = statementTimeout
        self.applicationName = applicationName
        self.searchPath = searchPath
    }

    /// Parses `postgres://user[:password]@host[:port]/database[?sslmode=...]`.
    public init(url: String) throws(PostgresConfigurationError) {
        guard let components = URLComponents(string: url),
            let scheme = components.scheme?.lowercased(), scheme == "postgres" || scheme == "postgresql"
        else { throw PostgresConfigurationError(reason: "expected a postgres:// URL") }
        let user = components.user.flatMap { $0.isEmpty ? nil : $0 } ?? "postgres"
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        self.init(
            host: components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1",
            port: components.port ?? 5432,
            user: user,
            password: components.password,
            database: path.isEmpty ? nil : path.removingPercentEncoding ?? path)
        for item in components.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "sslmode": sslMode = value
            case "application_name": applicationName = value
            case "host": host = value
            case "connect_timeout":
                guard let seconds = Int(value), seconds >= 0 else {
                    throw .init(reason: "connect_timeout must be seconds")
                }
                connectTimeout = .seconds(seconds)
            case "statement_timeout":
                guard let ms = Int(value), ms >= 0 else {
                    throw .init(reason: "statement_timeout must be milliseconds")
                }
                statementTimeout = ms == 0 ? nil : .milliseconds(ms)
            case "pool_size":
                guard let size = Int(value), size > 0 else {
                    throw .init(reason: "pool_size must be a positive integer")
                }
                poolSize = size
            case "search_path":
                searchPath = value.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            default:
                throw PostgresConfigurationError(reason: "unknown URL parameter \(item.name)")
            }
        }
    }

    /// The URL without the password, for logs.
    public var description: String {
        let secret = password == nil ? "" : ":***"
        return "postgres://\(user)\(secret)@\(host):\(port)/\(database)?sslmode=\(sslMode)&pool_size=\(poolSize)"
    }

    /// libpq keyword/value pairs for `PQconnectdbParams`.
    var libpqParameters: [(String, String)] {
        var pairs: [(String, String)] = [
            ("host", host), ("port", String(port)), ("user", user), ("dbname", database),
            ("sslmode", sslMode), ("application_name", applicationName),
            ("connect_timeout", String(max(2, Int(connectTimeout.components.seconds))))
        ]
        if let password { pairs.append(("password", password)) }
        var options = ["-c TimeZone=UTC"]
        if let statementTimeout {
            let ms =
                statementTimeout.components.seconds * 1000 + statementTimeout.components.attoseconds
                / 1_000_000_000_000_000
            options.append("-c statement_timeout=\(max(1, ms))")
        }
        if let searchPath, !searchPath.isEmpty {
            // Inside `options`, a space or backslash in a value is escaped with a backslash.
            let value = searchPath.map { PostgresIdentifier.quote($0) }.joined(separator: ",")
            options.append("-c search_path=" + Self.escapeOption(value))
        }
        pairs.append(("options", options.joined(separator: " ")))
        return pairs
    }

    private static func escapeOption(_ value: String) -> String {
        var out = ""
        for ch in value {
            if ch == " " || ch == "\\" { out.append("\\") }
            out.append(ch)
        }
        return out
    }
}

/// A configuration URL that could not be read; the reason never contains the password.
public struct PostgresConfigurationError: Error, Sendable, CustomStringConvertible {
    public var reason: String
    public var description: String { "invalid Postgres configuration: \(reason)" }
}
