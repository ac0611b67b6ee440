import BuzzKitCore
import BuzzKitPostgres
import BuzzKitRedis
import Foundation

/// The settings every BuzzKit service process shares, read from the environment.
///
/// | variable | default | meaning |
/// |---|---|---|
/// | `BUZZKIT_DATABASE_URL` | `postgres://buzzkit@127.0.0.1:5432/buzzkit` | PostgreSQL, the system of record |
/// | `BUZZKIT_REDIS_URL` | `redis://127.0.0.1:6379` | Redis, the streams between services |
/// | `BUZZKIT_HTTP_HOST` | `127.0.0.1` | address the HTTP port binds (`0.0.0.0` in containers) |
/// | `BUZZKIT_HTTP_PORT` | per service: gateway 8080, ingest 8081, workflow 8082, apns-sender 8083, liveactivity 8084, webhooks 8085 | the service's HTTP port (API on the gateway; health, readiness and metrics on all) |
/// | `BUZZKIT_HTTP_THREADS` | `2` | HTTP server worker threads |
/// | `BUZZKIT_MAX_BODY_BYTES` | `1048576` | largest accepted request body |
/// | `BUZZKIT_DB_POOL_SIZE` | `4` | PostgreSQL connections per process |
/// | `BUZZKIT_REDIS_POOL_SIZE` | `4` | Redis connections per process (blocking stream readers get their own) |
/// | `BUZZKIT_LOG_LEVEL` | `info` | trace, debug, info, notice, warning, error, critical |
/// | `BUZZKIT_SHUTDOWN_TIMEOUT` | `30s` | how long SIGTERM waits for in-flight work |
/// | `BUZZKIT_INSTANCE_ID` | `<service>-<hostname>-<pid>` | this replica's name (stream consumer name) |
public struct ServiceSettings: Sendable {
    public var serviceName: String
    public var instanceID: String
    public var databaseURL: String
    public var redisURL: String
    public var httpHost: String
    public var httpPort: Int
    public var httpThreads: Int
    public var maxBodyBytes: Int
    public var databasePoolSize: Int
    public var redisPoolSize: Int
    public var logLevel: Logger.Level
    public var shutdownTimeout: Duration

    /// The default HTTP port of each service, so a whole stack runs on one machine without settings.
    public static let defaultPorts: [String: Int] = [
        "gateway": 8080, "ingest": 8081, "workflow": 8082, "apns-sender": 8083, "liveactivity": 8084, "webhooks": 8085
    ]

    public init(serviceName: String, environment: [String: String]) throws(ConfigurationError) {
        var reader = ConfigReader(environment: environment)
        self.init(serviceName: serviceName, reading: &reader)
        try reader.validate()
    }

    /// Reads the variables with `reader`, which records every invalid one (its default is kept
    /// here): `ServiceMain` reads the service's own variables with the same reader, so one
    /// message names every invalid variable of both.
    public init(serviceName: String, reading reader: inout ConfigReader) {
        self.serviceName = serviceName
        let host = ProcessInfo.processInfo.hostName
        instanceID = reader.string("BUZZKIT_INSTANCE_ID", default: "\(serviceName)-\(host)-\(getpid())")
        databaseURL = reader.string("BUZZKIT_DATABASE_URL", default: "postgres://buzzkit@127.0.0.1:5432/buzzkit")
        redisURL = reader.string("BUZZKIT_REDIS_URL", default: "redis://127.0.0.1:6379")
        httpHost = reader.string("BUZZKIT_HTTP_HOST", default: "127.0.0.1")
        httpPort = reader.int("BUZZKIT_HTTP_PORT", default: Self.defaultPorts[serviceName] ?? 8080, range: 0...65535)
        httpThreads = reader.int("BUZZKIT_HTTP_THREADS", default: 2, range: 1...256)
        maxBodyBytes = reader.int("BUZZKIT_MAX_BODY_BYTES", default: 1 << 20, range: 1024...(64 << 20))
        databasePoolSize = reader.int("BUZZKIT_DB_POOL_SIZE", default: 4, range: 1...200)
        redisPoolSize = reader.int("BUZZKIT_REDIS_POOL_SIZE", default: 4, range: 1...200)
        logLevel = reader.logLevel("BUZZKIT_LOG_LEVEL", default: .info)
        shutdownTimeout = reader.duration("BUZZKIT_SHUTDOWN_TIMEOUT", default: .seconds(30))
        // Parsed here as the clients will parse them, so a bad URL is a configuration error (78),
        // not a failure of the runtime's start.
        do throws(PostgresConfigurationError) {
            _ = try PostgresConfiguration(url: databaseURL)
        } catch {
            reader.reject("BUZZKIT_DATABASE_URL", error.reason)
        }
        do throws(RedisError) {
            _ = try RedisConfiguration(url: redisURL)
        } catch {
            reader.reject("BUZZKIT_REDIS_URL", error.message)
        }
    }
}
