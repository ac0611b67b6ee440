// buzzkit-admin: operator commands.
//   buzzkit-admin migrate
//       applies the SQL migrations to BUZZKIT_DATABASE_URL.
//   buzzkit-admin bootstrap --workspace NAME [--if-empty] [--demo-tenant NAME [--apns-team-id T
//       --apns-key-id K --apns-key-file FILE.p8 --bundle-id B] [--environment sandbox|production]]
//       creates a workspace with a workspace key holding every scope and, with --demo-tenant, a
//       tenant with a tenant key and a client key; prints BUZZKIT_WORKSPACE_KEY=..., BUZZKIT_TENANT=...,
//       BUZZKIT_TENANT_KEY=..., BUZZKIT_CLIENT_KEY=... lines on stdout (the keys are shown only here).
//       Running it again creates another workspace, unless --if-empty is given: then it prints
//       nothing and exits 0 when any workspace exists.
import BuzzKitCore
import BuzzKitMigrations
import BuzzKitPostgres
import Foundation
import GatewayApp

/// The operator commands above, run by the `buzzkit-admin` executable and by `buzzkit-server`
/// (the container image's one binary). `arguments` are the command's own (without the program name).
public enum AdminCommand {
    static func fail(_ message: String, status: Int32 = 1) -> Never {
        FileHandle.standardError.write(Data("buzzkit-admin: \(message)\n".utf8))
        exit(status)
    }

    static let usage = """
        usage: buzzkit-admin migrate
               buzzkit-admin bootstrap --workspace NAME [--if-empty] [--demo-tenant NAME] [--apns-team-id T]
                                       [--apns-key-id K] [--apns-key-file FILE] [--bundle-id B] [--environment sandbox|production]
        """

    public static func run(
        arguments: [String] = Array(CommandLine.arguments.dropFirst()),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async -> Never {
        guard let command = arguments.first else { fail(usage, status: 2) }

        var options: [String: String] = [:]
        var flags: Set<String> = []
        var index = 1
        while index < arguments.count {
            let name = arguments[index]
            guard name.hasPrefix("--") else { fail("unexpected argument \(name)\n\(usage)", status: 2) }
            if name == "--if-empty" {
                flags.insert(name)
                index += 1
                continue
            }
            guard index + 1 < arguments.count else { fail("\(name) needs a value", status: 2) }
            options[name] = arguments[index + 1]
            index += 2
        }

        let databaseURL = environment["BUZZKIT_DATABASE_URL"] ?? "postgres://buzzkit@127.0.0.1:5432/buzzkit"
        let logger = Logger(label: "buzzkit-admin", logLevel: .warning, sink: StandardErrorSink())
        let postgres: PostgresClient
        do {
            postgres = try PostgresClient(url: databaseURL, logger: logger)
        } catch {
            fail("BUZZKIT_DATABASE_URL: \(error)", status: 78)
        }

        switch command {
        case "migrate":
            do {
                let applied = try await Migrator(client: postgres, logger: logger).migrate()
                FileHandle.standardError.write(Data("buzzkit-admin: \(applied.count) migration(s) applied\n".utf8))
            } catch {
                await postgres.shutdown()
                fail("migrate failed: \(error)")
            }
        case "bootstrap":
            guard let workspace = options["--workspace"], !workspace.isEmpty else {
                fail("--workspace NAME is required", status: 2)
            }
            var secretKey: [UInt8]?
            if let raw = environment["BUZZKIT_SECRET_KEY"], let data = Data(base64Encoded: raw), data.count == 32 {
                secretKey = Array(data)
            }
            var demo: Bootstrapper.DemoTenant?
            if let tenantName = options["--demo-tenant"] {
                var tenant = Bootstrapper.DemoTenant(
                    name: tenantName, teamID: options["--apns-team-id"],
                    keyID: options["--apns-key-id"], bundleID: options["--bundle-id"],
                    environment: options["--environment"] ?? "sandbox")
                if let file = options["--apns-key-file"] {
                    guard let pem = try? String(contentsOfFile: file, encoding: .utf8) else {
                        fail("cannot read \(file)")
                    }
                    tenant.privateKey = pem
                }
                demo = tenant
            }
            do {
                let bootstrapper = Bootstrapper(postgres: postgres, secretKey: secretKey)
                if flags.contains("--if-empty"), try await bootstrapper.hasWorkspace() {
                    FileHandle.standardError.write(
                        Data("buzzkit-admin: a workspace exists; nothing to do (--if-empty)\n".utf8))
                } else {
                    let result = try await bootstrapper.run(workspace: workspace, demo: demo)
                    print(result.shellLines.joined(separator: "\n"))
                }
            } catch {
                await postgres.shutdown()
                fail("bootstrap failed: \(error)")
            }
        default:
            fail("unknown command \(command)\n\(usage)", status: 2)
        }
        await postgres.shutdown()
        exit(0)
    }
}

/// Logs to stderr, so stdout carries only the shell lines.
private struct StandardErrorSink: LogSink {
    func write(_ line: String) { FileHandle.standardError.write(Data((line + "\n").utf8)) }
}
