// swift-tools-version:6.0
// BuzzKit: one package, layered bottom-up.
//   C system libraries (Shared/C/*)  ->  BuzzKitWire (wire types, no I/O, compiles for iOS)
//   -> BuzzKitCore (logging, config, metrics, lifecycle)  ->  thin wrappers over C
//   (Postgres, Redis, HTTP server, HTTP client, Crypto, APNs)  ->  BuzzKitContracts, BuzzKitAudience
//   -> BuzzKitIntake, BuzzKitQueries  ->  BuzzKitRuntime (what every service shares)
//   -> Services/* executables. Services never import each other.
// Each target declares exactly the package modules its files import: none that arrives only
// through another dependency, none unused. ./deploy/test checks it (deploy/lib/check_imports.py).
import PackageDescription

let package = Package(
    name: "BuzzKit",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "gateway", targets: ["Gateway"]),
        .executable(name: "ingest", targets: ["Ingest"]),
        .executable(name: "workflow", targets: ["Workflow"]),
        .executable(name: "apns-sender", targets: ["APNsSender"]),
        .executable(name: "liveactivity", targets: ["LiveActivity"]),
        .executable(name: "webhooks", targets: ["Webhooks"]),
        .executable(name: "buzzkit-admin", targets: ["BuzzKitAdmin"]),
        // Every service and buzzkit-admin in one executable: what the container image ships.
        .executable(name: "buzzkit-server", targets: ["BuzzKitServer"]),
        .executable(name: "buzzkit-bench", targets: ["BuzzKitBench"]),
        .executable(name: "apns-sim", targets: ["APNsSimulator"]),
        .library(name: "BuzzKitWire", targets: ["BuzzKitWire"]),
        // The iOS SDK (its core builds and is tested on Linux; Apple-only parts sit behind adapters).
        .library(name: "BuzzKit", targets: ["BuzzKit"]),
        .library(name: "BuzzKitNotificationServiceExtension", targets: ["BuzzKitNotificationServiceExtension"])
    ],
    targets: [
        // MARK: - C system libraries (C types never leave the wrapper modules)
        .systemLibrary(
            name: "CLibPQ", path: "Shared/C/CLibPQ", pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CHiredis", path: "Shared/C/CHiredis", providers: [.apt(["libhiredis-dev"])]),
        .systemLibrary(
            name: "CCurl", path: "Shared/C/CCurl", pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(
            name: "COpenSSL", path: "Shared/C/COpenSSL", pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]),
        .systemLibrary(
            name: "CSQLite", path: "Shared/C/CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(
            name: "CMicroHTTPD", path: "Shared/C/CMicroHTTPD", pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(
            name: "CNghttp2", path: "Shared/C/CNghttp2", pkgConfig: "libnghttp2",
            providers: [.apt(["libnghttp2-dev"])]),

        // MARK: - Shared core, no I/O
        .target(name: "BuzzKitWire", path: "Shared/Wire"),
        .target(name: "BuzzKitCore", dependencies: ["BuzzKitWire"], path: "Shared/Core"),

        // MARK: - Thin wrappers over C libraries
        .target(
            name: "BuzzKitPostgres", dependencies: ["CLibPQ", "BuzzKitWire", "BuzzKitCore"],
            path: "Shared/Postgres"),
        .target(name: "BuzzKitRedis", dependencies: ["BuzzKitCore", "CHiredis"], path: "Shared/Redis"),
        .target(
            name: "BuzzKitHTTPServer", dependencies: ["BuzzKitCore", "BuzzKitWire", "CMicroHTTPD"],
            path: "Shared/HTTPServer"),
        .target(name: "BuzzKitHTTPClient", dependencies: ["BuzzKitCore", "CCurl"], path: "Shared/HTTPClient"),
        .target(name: "BuzzKitCrypto", dependencies: ["BuzzKitWire", "COpenSSL"], path: "Shared/Crypto"),
        // HTTP/2 over TLS on nghttp2 and OpenSSL: one event-loop thread for many clients, each
        // client one origin's connections and streams (the APNs transport).
        .target(
            name: "BuzzKitHTTP2", dependencies: ["BuzzKitCore", "CNghttp2", "COpenSSL"], path: "Shared/HTTP2"),
        // APNs without a socket: requests, payload bytes, provider tokens, reasons, retry policy;
        // plus, apart in Transport/, the wire: BuzzKitHTTP2 (nghttp2), or the former libcurl client
        // (BuzzKitHTTPClient) kept for the benchmarks' comparison.
        .target(
            name: "BuzzKitAPNs",
            dependencies: ["BuzzKitWire", "BuzzKitCore", "BuzzKitCrypto", "BuzzKitHTTPClient", "BuzzKitHTTP2"],
            path: "Shared/APNs"),
        // What every process that sends to APNs shares: the client pool per (team, environment)
        // and the tenants' credentials (apns-sender and liveactivity).
        .target(
            name: "BuzzKitPush",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitCrypto", "BuzzKitPostgres", "BuzzKitAPNs", "BuzzKitContracts",
                "BuzzKitHTTP2"
            ],
            path: "Shared/Push"),
        .target(
            name: "BuzzKitMigrations", dependencies: ["BuzzKitPostgres", "BuzzKitCore"],
            path: "Shared/Migrations", resources: [.copy("SQL")]),

        // Stream names and entry encodings between services, and the statuses of the ledger: the
        // contracts on the wire of Redis and in the shared tables. No I/O.
        .target(name: "BuzzKitContracts", dependencies: ["BuzzKitWire", "BuzzKitRedis"], path: "Shared/Contracts"),

        // The expression language of audiences: parse, evaluate in memory, compile to SQL. No I/O.
        .target(name: "BuzzKitAudience", dependencies: ["BuzzKitWire"], path: "Shared/Audience"),
        // Workflows without I/O: definitions (parse, validate, canonical JSON), wall-clock time and
        // quiet hours, templates, the run state machine and the dry run. The workflow service runs it.
        .target(
            name: "BuzzKitWorkflows", dependencies: ["BuzzKitWire", "BuzzKitAudience"], path: "Shared/Workflows",
            exclude: ["README.md"]),

        // What comes in: message and event intake (validation, the message row, XADD on the streams).
        .target(
            name: "BuzzKitIntake",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitRedis", "BuzzKitPostgres", "BuzzKitAudience",
                "BuzzKitContracts", "BuzzKitLedger", "BuzzKitPolicy"
            ],
            path: "Shared/Intake"),
        // Read queries over tables one service writes and another reads (events and receipts:
        // written by ingest, read by the gateway's routes), each with its row decoding.
        .target(name: "BuzzKitQueries", dependencies: ["BuzzKitWire", "BuzzKitPostgres"], path: "Shared/Queries"),
        // The send policy (migration 0023): categories, subscribers' preferences and their history,
        // frequency caps and the decision every send path asks for. SQL and row decoding only.
        .target(
            name: "BuzzKitPolicy", dependencies: ["BuzzKitWire", "BuzzKitPostgres", "BuzzKitCrypto", "BuzzKitWebhooks"],
            path: "Shared/Policy"),

        // Workflow runs in Postgres (migration 0011): the gateway starts, cancels and reads runs, the
        // workflow service claims and advances them. SQL and row decoding only.
        .target(
            name: "BuzzKitWorkflowRuns",
            dependencies: [
                "BuzzKitWire", "BuzzKitPostgres", "BuzzKitContracts", "BuzzKitWorkflows", "BuzzKitWebhooks",
                "BuzzKitRetention"
            ],
            path: "Shared/WorkflowRuns"),

        // The delivery ledger (messages, deliveries, delivery_chunks, delivery_payloads, the
        // attempts, live_activities, live_activity_start_tokens): every statement that writes
        // them, the one mapping from an APNs result to a delivery's outcome and the one attempt
        // format. The intake, the workflow service, both senders and the gateway call it.
        .target(
            name: "BuzzKitLedger",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitPostgres", "BuzzKitContracts", "BuzzKitAPNs",
                "BuzzKitCrypto", "BuzzKitWebhooks", "BuzzKitRetention", "BuzzKitWorkflowRuns"
            ],
            path: "Shared/Ledger"),

        // Outbound webhooks (migration 0020): endpoints and their secrets, the producers' seam
        // (WebhookOutbox, called inside a producer's own statement), messages, attempts, signing and
        // the address rules. The gateway manages endpoints through it, producers enqueue through it,
        // the webhooks service sends through it. SQL, signing and address checks; no HTTP.
        .target(
            name: "BuzzKitWebhooks",
            dependencies: ["BuzzKitWire", "BuzzKitCore", "BuzzKitPostgres", "BuzzKitCrypto", "BuzzKitRetention"],
            path: "Shared/Webhooks"),

        // Retention by time partitions (docs/data-lifecycle.md): weekly partitions made ahead,
        // dropped by a concurrent detach, one pass at a time under an advisory lock. The owners of
        // partitioned tables (workflow runs, webhook attempts) run it.
        .target(
            name: "BuzzKitRetention",
            dependencies: ["BuzzKitCore", "BuzzKitPostgres"],
            path: "Shared/Retention"),

        // MARK: - What every service process shares
        .target(
            name: "BuzzKitRuntime",
            dependencies: ["BuzzKitWire", "BuzzKitCore", "BuzzKitPostgres", "BuzzKitRedis", "BuzzKitHTTPServer"],
            path: "Shared/Runtime"),

        // MARK: - Services and tools (executables only read the environment and run)
        // The dashboard's static files (Services/gateway/App/Dashboard) ship as the target's resources.
        .target(
            name: "GatewayApp",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitCrypto", "BuzzKitPostgres", "BuzzKitRedis",
                "BuzzKitHTTPServer", "BuzzKitAPNs", "BuzzKitContracts", "BuzzKitAudience",
                "BuzzKitIntake", "BuzzKitQueries", "BuzzKitWorkflows", "BuzzKitWorkflowRuns", "BuzzKitLedger",
                "BuzzKitPolicy",
                "BuzzKitWebhooks", "BuzzKitRuntime", "BuzzKitRetention"
            ],
            path: "Services/gateway/App", resources: [.copy("Dashboard")]),
        .executableTarget(name: "Gateway", dependencies: ["GatewayApp"], path: "Services/gateway/Main"),
        .target(
            name: "IngestApp",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitPostgres", "BuzzKitRedis",
                "BuzzKitContracts", "BuzzKitRuntime", "BuzzKitWebhooks", "BuzzKitRetention"
            ],
            path: "Services/ingest/App"),
        .executableTarget(name: "Ingest", dependencies: ["IngestApp"], path: "Services/ingest/Main"),
        .target(
            name: "WorkflowApp",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitCrypto", "BuzzKitPostgres", "BuzzKitRedis",
                "BuzzKitContracts", "BuzzKitWorkflows", "BuzzKitWorkflowRuns", "BuzzKitRuntime", "BuzzKitLedger",
                "BuzzKitPolicy", "BuzzKitRetention"
            ],
            path: "Services/workflow/App"),
        .executableTarget(name: "Workflow", dependencies: ["WorkflowApp"], path: "Services/workflow/Main"),
        .target(
            name: "APNsSenderApp",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitPostgres", "BuzzKitRedis", "BuzzKitAPNs", "BuzzKitContracts",
                "BuzzKitAudience", "BuzzKitRuntime", "BuzzKitPush", "BuzzKitLedger", "BuzzKitPolicy",
                "BuzzKitRetention"
            ],
            path: "Services/apns-sender/App"),
        .executableTarget(name: "APNsSender", dependencies: ["APNsSenderApp"], path: "Services/apns-sender/Main"),
        .target(
            name: "LiveActivityApp",
            dependencies: [
                "BuzzKitCore", "BuzzKitRedis", "BuzzKitAPNs", "BuzzKitPush", "BuzzKitContracts", "BuzzKitRuntime",
                "BuzzKitLedger"
            ],
            path: "Services/liveactivity/App"),
        .executableTarget(name: "LiveActivity", dependencies: ["LiveActivityApp"], path: "Services/liveactivity/Main"),
        .target(
            name: "WebhooksApp",
            dependencies: [
                "BuzzKitCore", "BuzzKitCrypto", "BuzzKitPostgres", "BuzzKitHTTPClient", "BuzzKitWebhooks",
                "BuzzKitRetention", "BuzzKitRuntime"
            ],
            path: "Services/webhooks/App"),
        .executableTarget(name: "Webhooks", dependencies: ["WebhooksApp"], path: "Services/webhooks/Main"),
        // buzzkit-admin's commands (migrate, bootstrap), run by its executable and by buzzkit-server.
        .target(
            name: "AdminCommand",
            dependencies: ["BuzzKitCore", "BuzzKitPostgres", "BuzzKitMigrations", "GatewayApp"],
            path: "Tools/buzzkit-admin/Command"),
        .executableTarget(name: "BuzzKitAdmin", dependencies: ["AdminCommand"], path: "Tools/buzzkit-admin/Main"),
        .executableTarget(
            name: "BuzzKitServer",
            dependencies: [
                "GatewayApp", "IngestApp", "WorkflowApp", "APNsSenderApp", "LiveActivityApp", "WebhooksApp",
                "AdminCommand"
            ],
            path: "Tools/buzzkit-server"),
        // The Swift side of bench/*.sh, the services' own measurements included (their parts run
        // in-process from the App libraries); no service executable carries benchmark code.
        .executableTarget(
            name: "BuzzKitBench",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitPostgres", "BuzzKitRedis",
                "BuzzKitHTTPServer", "BuzzKitContracts", "BuzzKitIntake",
                "BuzzKitWorkflows", "BuzzKitRuntime", "BuzzKitWebhooks", "IngestApp", "WorkflowApp"
            ],
            path: "Tools/bench"),

        // The APNs simulator: a local stand-in for Apple's service (HTTP/2 over TLS), written in C on
        // nghttp2 and OpenSSL so it out-runs anything the sender can push.
        .executableTarget(
            name: "APNsSimulator", path: "Tools/apns-sim",
            exclude: ["tests", "README.md", "make-certs.sh"],
            cSettings: [.unsafeFlags(["-O2"])],
            linkerSettings: [.linkedLibrary("nghttp2"), .linkedLibrary("ssl"), .linkedLibrary("crypto")]),

        // MARK: - The iOS SDK
        .target(name: "BuzzKit", dependencies: ["BuzzKitWire", "CSQLite"], path: "SDK/Sources/BuzzKit"),
        .target(
            name: "BuzzKitNotificationServiceExtension", dependencies: ["BuzzKit", "BuzzKitWire"],
            path: "SDK/Sources/BuzzKitNotificationServiceExtension"),

        // MARK: - Tests (SwiftPM links every test target into one test binary)
        .target(
            name: "BuzzKitTestSupport",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitPostgres", "BuzzKitRedis", "BuzzKitHTTPClient",
                "BuzzKitMigrations", "BuzzKitWebhooks"
            ],
            path: "Tests/Support"),
        .executableTarget(
            name: "StreamWorkerFixture", dependencies: ["BuzzKitRedis", "BuzzKitRuntime"],
            path: "Tests/Fixtures/stream-worker"),
        .testTarget(
            name: "APNsTests",
            dependencies: [
                "BuzzKitWire", "BuzzKitCrypto", "BuzzKitHTTPClient", "BuzzKitHTTP2",
                "BuzzKitAPNs", "BuzzKitTestSupport"
            ], path: "Tests/APNsTests"),
        .testTarget(
            name: "CoreTests", dependencies: ["BuzzKitWire", "BuzzKitCore", "BuzzKitCrypto"],
            path: "Tests/CoreTests"),
        .testTarget(
            name: "PostgresTests",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitPostgres", "BuzzKitMigrations",
                "BuzzKitTestSupport"
            ],
            path: "Tests/PostgresTests"),
        .testTarget(
            name: "RedisTests", dependencies: ["BuzzKitCore", "BuzzKitRedis", "BuzzKitTestSupport"],
            path: "Tests/RedisTests"),
        .testTarget(
            name: "HTTPTests",
            dependencies: ["BuzzKitWire", "BuzzKitCore", "BuzzKitHTTPServer", "BuzzKitTestSupport"],
            path: "Tests/HTTPTests"),
        .testTarget(
            name: "GatewayTests",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitCrypto", "BuzzKitPostgres", "BuzzKitRedis",
                "BuzzKitHTTPServer", "BuzzKitHTTPClient", "BuzzKitMigrations", "BuzzKitContracts",
                "BuzzKitRuntime", "BuzzKitIntake", "BuzzKitWorkflows", "BuzzKitPolicy", "GatewayApp", "IngestApp",
                "BuzzKitRetention", "BuzzKitTestSupport", "BuzzKitLedger"
            ],
            path: "Tests/GatewayTests"),
        .testTarget(
            name: "IngestTests",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitPostgres", "BuzzKitRedis",
                "BuzzKitContracts", "BuzzKitIntake", "BuzzKitQueries", "IngestApp", "BuzzKitRetention",
                "BuzzKitTestSupport"
            ],
            path: "Tests/IngestTests"),
        .testTarget(
            name: "SenderTests",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitCrypto", "BuzzKitPostgres",
                "BuzzKitHTTPClient", "BuzzKitMigrations", "BuzzKitContracts", "GatewayApp",
                "APNsSenderApp", "BuzzKitPush", "BuzzKit", "BuzzKitTestSupport", "BuzzKitAPNs", "BuzzKitLedger",
                "BuzzKitWorkflows", "BuzzKitWorkflowRuns", "BuzzKitPolicy", "BuzzKitRetention"
            ],
            path: "Tests/SenderTests"),
        .testTarget(
            name: "LiveActivityTests",
            dependencies: [
                "BuzzKitCore", "BuzzKitPostgres", "BuzzKitRedis", "BuzzKitContracts", "BuzzKitLedger",
                "LiveActivityApp",
                "BuzzKitTestSupport"
            ],
            path: "Tests/LiveActivityTests"),
        .testTarget(
            name: "LedgerTests",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitPostgres", "BuzzKitContracts", "BuzzKitAPNs", "BuzzKitHTTPClient",
                "BuzzKitLedger", "BuzzKitMigrations", "BuzzKitTestSupport"
            ],
            path: "Tests/LedgerTests"),
        .testTarget(
            name: "SDKTests",
            dependencies: [
                "BuzzKitWire", "BuzzKit", "BuzzKitNotificationServiceExtension", "BuzzKitCrypto",
                "BuzzKitTestSupport"
            ],
            path: "Tests/SDKTests"),
        .testTarget(
            name: "AudienceTests",
            dependencies: [
                "BuzzKitWire", "BuzzKitPostgres", "BuzzKitMigrations", "BuzzKitAudience",
                "BuzzKitWorkflows", "BuzzKitTestSupport"
            ],
            path: "Tests/AudienceTests"),
        .testTarget(
            name: "WorkflowTests",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitPostgres", "BuzzKitRedis", "BuzzKitContracts",
                "BuzzKitWorkflows", "BuzzKitWorkflowRuns", "BuzzKitLedger", "WorkflowApp", "BuzzKitTestSupport",
                "BuzzKitRetention"
            ],
            path: "Tests/WorkflowTests"),
        .testTarget(
            name: "WebhooksTests",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitCrypto", "BuzzKitPostgres", "BuzzKitHTTPClient",
                "BuzzKitMigrations", "BuzzKitWebhooks", "BuzzKitRetention", "GatewayApp", "BuzzKitTestSupport"
            ],
            path: "Tests/WebhooksTests"),
        .testTarget(
            name: "ServiceTests",
            dependencies: [
                "BuzzKitWire", "BuzzKitCore", "BuzzKitRedis", "BuzzKitHTTPClient",
                "BuzzKitTestSupport"
            ],
            path: "Tests/ServiceTests", exclude: ["Fixtures"])
    ],
    swiftLanguageModes: [.v6]
)
