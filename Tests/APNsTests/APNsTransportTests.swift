import BuzzKitAPNs
import BuzzKitCrypto
import BuzzKitHTTP2
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Synchronization
import Testing

/// The nghttp2 transport's rules against a real `apns-sim`, each driven by the simulator's control
/// API and judged by what the simulator saw (its counters and recordings), not by the client's
/// own word: stream limits, GOAWAY mid-batch, a connection dropped mid-request, token renewal on
/// one connection, retry-after, TLS failures, a slow server, and teams kept apart.
@Suite("APNs transport rules against the simulator", .requiresTestStack)
struct APNsTransportTests {
    static let topic = "com.example.gym"

    private func request(_ token: String = APNsSimulatorProcess.deviceToken(), n: Int = 0) -> APNsRequest {
        APNsRequest(
            deviceToken: token, topic: Self.topic,
            content: MessageContent(title: "Leg day", body: "6:00", data: ["n": .int(Int64(n))], collapseId: "legs"),
            messageId: "msg-1", apnsId: UUID().uuidString.lowercased())
    }

    private func requests(_ count: Int) -> [APNsRequest] { (0..<count).map { request(n: $0) } }

    @Test func serverStreamLimitIsHonouredAndASecondConnectionOpens() async throws {
        let sim = try await APNsSimulatorProcess()
        try await sim.post("settings", ["maxConcurrentStreams": 10])
        try await sim.post("delay", ["ms": 100])
        let client = try sim.makeClient { $0.maxConnections = 2 }
        let batch = requests(120)
        let responses = await client.send(batch: batch, credentials: sim.credentials)
        #expect(responses.map(\.status) == Array(repeating: 200, count: 120))
        let stats = try await sim.stats()
        #expect(stats["accepted"]?.intValue == 120)
        // Never more streams open on a connection than the server allowed.
        #expect((stats["maxOpenStreams"]?.intValue ?? 99) <= 10)
        #expect(stats["connections"]?["total"]?.intValue == 2)
        let own = try #require(client.transportStatistics(team: sim.credentials.teamId))
        #expect(own.peakStreams <= 10)
        #expect(own.connections == 2)
        await client.shutdown()
        await sim.stop()
    }

    @Test func streamLimitLoweredMidConnectionIsFollowed() async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient { $0.maxConnections = 1 }
        #expect(await client.send(batch: requests(20), credentials: sim.credentials).allSatisfy { $0.status == 200 })
        try await sim.post("reset")  // the counters start again; the connection stays
        try await sim.post("settings", ["maxConcurrentStreams": 5])
        try await Task.sleep(for: .milliseconds(200))  // the SETTINGS frame reaches the open connection
        try await sim.post("delay", ["ms": 50])
        let responses = await client.send(batch: requests(60), credentials: sim.credentials)
        #expect(responses.allSatisfy { $0.status == 200 })
        let stats = try await sim.stats()
        #expect((stats["maxOpenStreams"]?.intValue ?? 99) <= 5)
        #expect(client.connectionsOpened == 1)
        await client.shutdown()
        await sim.stop()
    }

    @Test func goawayMidBatchResendsOnlyWhatTheServerNeverProcessed() async throws {
        let sim = try await APNsSimulatorProcess()
        // A minute per request: under a loaded test run the 1,500 requests can pass the default
        // 10 s, and a timed-out request is resent by design (its outcome unknown), which is not
        // what this test is about.
        let client = try sim.makeClient { $0.requestTimeout = .seconds(60) }
        // Warm the connection, then: the 300th request from now brings a GOAWAY.
        #expect(await client.send(batch: requests(1), credentials: sim.credentials)[0].status == 200)
        try await sim.post("reset")
        try await sim.post("goaway", ["afterRequests": 300])
        let batch = requests(1500)
        let results = await client.sendWithRetries(
            batch: batch, credentials: sim.credentials, sleep: { _ in Issue.record("no retry expected") })
        #expect(results.allSatisfy { $0.attempts.count == 1 && $0.attempts[0].status == 200 })
        let stats = try await sim.stats()
        #expect(stats["goawaysSent"]?.intValue == 1)
        // Every push reached "Apple" exactly once: the refused ones went out again, nothing twice.
        #expect(stats["accepted"]?.intValue == 1500)
        let pushes = try await sim.simulator.allPushes()
        let perToken = Dictionary(grouping: pushes, by: { $0["token"]?.stringValue ?? "" })
        #expect(perToken.count == 1500)
        #expect(perToken.values.allSatisfy { $0.count == 1 })
        let own = try #require(client.transportStatistics(team: sim.credentials.teamId))
        #expect(own.goaways == 1)
        #expect(own.connections == 2)
        await client.shutdown()
        await sim.stop()
    }

    @Test func immediateGoawayWithStreamsInFlightLosesNothing() async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient()
        try await sim.post("delay", ["ms": 300])
        let credentials = sim.credentials
        let batch = requests(400)
        async let sent = client.sendWithRetries(batch: batch, credentials: credentials, sleep: { _ in })
        try await Task.sleep(for: .milliseconds(150))
        try await sim.post("goaway")
        let results = await sent
        #expect(results.allSatisfy { if case .delivered = $0.outcome { true } else { false } })
        #expect(try await sim.stats()["accepted"]?.intValue == 400)
        await client.shutdown()
        await sim.stop()
    }

    @Test func connectionDroppedMidRequestIsRecordedAndRetriedUnderTheSameApnsId() async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient()
        #expect(await client.send(batch: requests(1), credentials: sim.credentials)[0].status == 200)
        // Answers wait 300 ms, so requests are in flight when the 40th arrives and the
        // connection is reset under them.
        try await sim.post("delay", ["ms": 300, "count": 100])
        try await sim.post("drop", ["afterRequests": 40])
        let batch = requests(100)
        let sleeps = Mutex(0)
        let results = await client.sendWithRetries(
            batch: batch, credentials: sim.credentials, unitRandom: { 0 },
            sleep: { _ in sleeps.withLock { $0 += 1 } })
        #expect(try await sim.stats()["connections"]?["dropped"]?.intValue == 1)
        var broken = 0
        for (request, result) in zip(batch, results) {
            guard case .delivered = result.outcome else {
                Issue.record("not delivered: \(result.outcome)")
                continue
            }
            let first = try #require(result.attempts.first)
            if first.status == 0 {
                broken += 1
                #expect(first.transportError?.code == .connectionBroken)
                #expect(result.attempts.count == 2)
            }
            // Every attempt carried the delivery's apns-id: a device shows one notification.
            #expect(Set(result.attempts.compactMap { $0.requestHeaders["apns-id"] }) == [request.apnsId!])
            let pushes = try await sim.pushes(token: request.deviceToken)
            #expect(!pushes.isEmpty)
            #expect(pushes.allSatisfy { $0["apnsId"]?.stringValue?.lowercased() == request.apnsId })
        }
        // What was written to the reset connection got no answer and went again after a backoff.
        #expect(broken >= 40)
        #expect(sleeps.withLock { $0 } == broken)
        await client.shutdown()
        await sim.stop()
    }

    @Test func providerTokenIsRenewedOnTheSameConnectionAfterItsWindow() async throws {
        let sim = try await APNsSimulatorProcess()
        let clock = ManualClock(Date())
        let client = try sim.makeClient(tokenCache: APNsTokenCache(now: { clock.now }))
        let first = await client.send(batch: requests(5), credentials: sim.credentials)
        #expect(first.allSatisfy { $0.status == 200 })
        // 51 minutes later by both clocks: the cache signs a new token (after 50), which the
        // server takes on the same connection (20 minutes after the first token's first use).
        clock.advance(minutes: 51)
        try await sim.post("clock", ["offsetMs": .int(51 * 60 * 1000)])
        let second = await client.send(batch: requests(5), credentials: sim.credentials)
        #expect(second.allSatisfy { $0.status == 200 })
        let issued = Set((first + second).compactMap(\.tokenIssuedAt))
        #expect(issued.count == 2)
        #expect(client.connectionsOpened == 1)
        let stats = try await sim.stats()
        #expect(stats["rejected"]?["TooManyProviderTokenUpdates"] == nil)
        // And the hour after that the renewed token expires on the server's clock: renewed again.
        clock.advance(minutes: 61)
        try await sim.post("clock", ["offsetMs": .int(112 * 60 * 1000)])
        let third = await client.sendWithRetries(batch: requests(3), credentials: sim.credentials, sleep: { _ in })
        #expect(third.allSatisfy { if case .delivered = $0.outcome { true } else { false } })
        await client.shutdown()
        await sim.stop()
    }

    @Test(arguments: [7, nil] as [Int?])
    func tooManyRequestsWaitsForRetryAfterOrTheBackoff(retryAfter: Int?) async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient()
        var fault: [String: JSONValue] = ["status": 429, "count": 1]
        if let retryAfter { fault["retryAfter"] = .int(Int64(retryAfter)) }
        try await sim.post("fail", .object(fault))
        let waits = Mutex<[Duration]>([])
        let results = await client.sendWithRetries(
            batch: [request()], credentials: sim.credentials, unitRandom: { 1 },
            sleep: { delay in waits.withLock { $0.append(delay) } })
        #expect(results[0].attempts.map(\.status) == [429, 200])
        #expect(results[0].attempts[0].retryAfter == retryAfter.map { .seconds($0) })
        #expect(waits.withLock { $0 } == [retryAfter.map { .seconds($0) } ?? .milliseconds(500)])
        await client.shutdown()
        await sim.stop()
    }

    @Test func untrustedCertificateFailsAsTLSWithoutRetry() async throws {
        let sim = try await APNsSimulatorProcess()
        let other = try await APNsSimulatorProcess()  // another CA: its ca.pem does not sign `sim`
        let client = try sim.makeClient { $0.caFile = other.caFile }
        let sleeps = Mutex(0)
        let results = await client.sendWithRetries(
            batch: [request()], credentials: sim.credentials, sleep: { _ in sleeps.withLock { $0 += 1 } })
        #expect(results[0].attempts.count == 1)
        #expect(results[0].attempts[0].transportError?.code == .tlsFailed)
        #expect(results[0].outcome == .failed(reason: nil))
        #expect(sleeps.withLock { $0 } == 0)
        #expect(try await sim.stats()["accepted"]?.intValue == 0)
        await client.shutdown()
        await sim.stop()
        await other.stop()
    }

    @Test(arguments: [PeerServer.Mode.plain, .tlsWithoutH2])
    func serverThatDoesNotSpeakTLSWithH2FailsAsTLS(mode: PeerServer.Mode) async throws {
        let sim = try await APNsSimulatorProcess()
        let peer = try await PeerServer(mode, certificateDirectory: (sim.caFile as NSString).deletingLastPathComponent)
        let client = try APNsClient(
            configuration: .init(environment: .sandbox, baseURL: "https://127.0.0.1:\(peer.port)", caFile: sim.caFile),
            tokenCache: APNsTokenCache(), logger: .silent())
        let response = await client.send(request(), credentials: sim.credentials)
        #expect(response.status == 0)
        #expect(response.transportError?.code == .tlsFailed, "\(String(describing: response.transportError))")
        #expect(response.disposition == .failed(reason: nil))
        await client.shutdown()
        await sim.stop()
    }

    @Test func slowServerMakesSendersWaitInsteadOfQueueing() async throws {
        let sim = try await APNsSimulatorProcess()
        try await sim.post("delay", ["ms": 200])
        let client = try sim.makeClient {
            $0.maxConnections = 1
            $0.maxOutstandingRequests = 50
        }
        let credentials = sim.credentials
        let statuses = await withTaskGroup(of: [Int].self) { group in
            for _ in 0..<8 {
                let batch = requests(30)
                group.addTask { await client.send(batch: batch, credentials: credentials).map(\.status) }
            }
            var all: [Int] = []
            for await part in group { all += part }
            return all
        }
        #expect(statuses == Array(repeating: 200, count: 240))
        let own = try #require(client.transportStatistics(team: credentials.teamId))
        // Never more than the limit admitted: the rest of the 240 waited in their callers.
        #expect(own.peakOutstanding <= 50)
        #expect(own.peakOutstanding >= 30)
        #expect((try await sim.stats()["maxOpenStreams"]?.intValue ?? 99) <= 50)
        await client.shutdown()
        await sim.stop()
    }

    @Test func requestWithoutAnAnswerTimesOutAsRetryable() async throws {
        let sim = try await APNsSimulatorProcess()
        try await sim.post("delay", ["ms": 3000, "count": 1])
        let client = try sim.makeClient { $0.requestTimeout = .milliseconds(500) }
        let response = await client.send(request(), credentials: sim.credentials)
        #expect(response.status == 0)
        #expect(response.transportError?.code == .timeout)
        #expect(response.disposition == .retryable(reason: nil))
        // The connection stays usable for the next request.
        #expect(await client.send(request(), credentials: sim.credentials).status == 200)
        #expect(client.connectionsOpened == 1)
        await client.shutdown()
        await sim.stop()
    }

    @Test func twoTeamsNeverShareAConnection() async throws {
        let sim = try await APNsSimulatorProcess()
        let otherKey = ES256PrivateKey.generate()
        let other = try APNsCredentials(teamId: "TEAM000002", keyId: "KEYOTHER02", privateKey: otherKey)
        try await sim.post(
            "keys", ["kid": "KEYOTHER02", "team": "TEAM000002", "pem": .string(otherKey.publicKeyPEM)])
        // One client handed both teams (the pool makes one per team; the transport keeps them
        // apart even when misused).
        let client = try sim.makeClient()
        let credentials = sim.credentials
        async let a = client.send(batch: requests(200), credentials: credentials)
        async let b = client.send(batch: requests(200), credentials: other)
        let (first, second) = await (a, b)
        #expect((first + second).allSatisfy { $0.status == 200 })
        let stats = try await sim.stats()
        #expect(stats["connections"]?["mixedTeams"]?.intValue == 0)
        #expect(stats["connections"]?["total"]?.intValue == 2)
        await client.shutdown()
        await sim.stop()
    }

    @Test func theLedgerKeepsTheFieldsAsSentOnTheWire() async throws {
        let sim = try await APNsSimulatorProcess()
        let client = try sim.makeClient()
        let batch = requests(50)
        let responses = await client.send(batch: batch, credentials: sim.credentials)
        #expect(responses.allSatisfy { $0.status == 200 })
        // The fields on the wire are the ledger's copy, the JWT aside.
        let push = try #require(try await sim.pushes(token: batch[0].deviceToken).first)
        var ledger = responses[0].requestHeadersJSON.objectValue ?? [:]
        ledger["authorization"] = nil
        #expect(push["headers"] == .object(ledger))
        await client.shutdown()
        await sim.stop()
    }
}

/// A real TCP peer that is not an APNs server: `plain` answers an HTTP/1.1 400 in clear text to
/// whatever arrives; `tlsWithoutH2` completes a TLS handshake with the simulator's certificate but
/// agrees only to `http/1.1` (Python's ssl module, through `python3`).
final class PeerServer: Sendable {
    enum Mode: String, Sendable, CustomTestStringConvertible {
        case plain
        case tlsWithoutH2 = "tls-http1"
        var testDescription: String { rawValue }
    }

    let port: Int
    private let process: ServiceProcess

    private static let script = #"""
        import socket, ssl, sys
        mode, directory = sys.argv[1], sys.argv[2]
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        print(server.getsockname()[1], flush=True)
        context = None
        if mode == "tls-http1":
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(directory + "/cert.pem", directory + "/key.pem")
            context.set_alpn_protocols(["http/1.1"])
        while True:
            connection, _ = server.accept()
            try:
                if context:
                    connection = context.wrap_socket(connection, server_side=True)
                connection.recv(4096)
                connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            except Exception:
                pass
            finally:
                connection.close()
        """#

    init(_ mode: Mode, certificateDirectory: String) async throws {
        process = try ServiceProcess(
            path: "/usr/bin/python3", name: "peer-server", environment: [:],
            arguments: ["-c", Self.script, mode.rawValue, certificateDirectory])
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            if let port = process.output.split(separator: "\n").first.flatMap({ Int($0) }) {
                self.port = port
                return
            }
            guard process.isRunning, ContinuousClock.now < deadline else {
                throw PeerServerError(output: process.output)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}

struct PeerServerError: Error, CustomStringConvertible {
    var output: String
    var description: String { "the peer server did not start: \(output)" }
}
