import BuzzKitAudience
import BuzzKitMigrations
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation

/// A deterministic pseudo-random generator (SplitMix64), so a failing fixture can be reproduced.
struct SeededRandom: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }
    mutating func pick<T>(_ items: [T]) -> T { items[Int.random(in: 0..<items.count, using: &self)] }
}

/// One generated subscriber, with everything the three evaluations read.
struct FixtureSubscriber {
    var id: String
    var attributes: [String: JSONValue]
    var timezone: String?
    var locale: String?
    var createdAt: Int64
    var topics: Set<String>
    var devices: [(token: String, environment: String, active: Bool)]
}

struct FixtureEvent {
    var id: String
    var name: String
    /// The id it is stored under: a subscriber id or an anonymous id.
    var storedUnder: String
    var data: JSONValue
    var occurredAt: Int64
}

/// 200 subscribers with random (sometimes missing, sometimes wrongly typed) attributes, topics,
/// devices, about 60 days of events, and anonymous ids aliased to subscribers.
struct AudienceFixtures {
    static let day: Int64 = 86_400_000_000
    var now: Int64
    var subscribers: [FixtureSubscriber] = []
    var events: [FixtureEvent] = []
    /// anonymous id -> subscriber id
    var aliases: [String: String] = [:]

    init(seed: UInt64, count: Int = 200, now: Int64) {
        self.now = now
        var rng = SeededRandom(state: seed)
        let plans: [JSONValue] = ["free", "pro", "team", "PRO", 5, true]
        let countries: [JSONValue] = ["DE", "AT", "FR", "US", 49]
        let names: [JSONValue] = ["Anna", "anna", "Bob", "Álvaro", "Ärger", "Zoë", "", 7]
        let cities: [JSONValue] = ["Berlin", "Bern", "Paris", "berlin", 3]
        for i in 0..<count {
            var a: [String: JSONValue] = [:]
            if rng.chance(0.85) { a["plan"] = rng.pick(plans) }
            if rng.chance(0.8) {
                a["age"] =
                    rng.chance(0.8)
                    ? .int(Int64.random(in: 10...80, using: &rng))
                    : rng.pick([.string("30"), .double(30.5), .int(30), .null])
            }
            if rng.chance(0.7) { a["country"] = rng.pick(countries) }
            if rng.chance(0.8) { a["name"] = rng.pick(names) }
            if rng.chance(0.6) { a["vip"] = rng.pick([.bool(true), .bool(false), .string("true")]) }
            if rng.chance(0.5) { a["email"] = rng.chance(0.8) ? .string("u\(i)@example.com") : .null }
            if rng.chance(0.7) { a["score"] = .double(Double(Int.random(in: -20...80, using: &rng)) / 8) }
            if rng.chance(0.5) { a["weird key"] = rng.pick(["x", "y", 1]) }
            switch Int.random(in: 0..<5, using: &rng) {
            case 0: a["profile"] = "not an object"
            case 1: break
            case 2: a["profile"] = ["age": .int(Int64.random(in: 15...70, using: &rng)), "city": rng.pick(cities)]
            default:
                a["profile"] = [
                    "age": rng.pick([.int(Int64.random(in: 15...70, using: &rng)), "41"]),
                    "city": rng.pick(cities),
                    "address": rng.chance(0.8) ? ["country": rng.pick(countries)] : ["DE"]
                ]
            }
            var topics: Set<String> = []
            for topic in ["sports", "news", "deals"] where rng.chance(0.35) { topics.insert(topic) }
            var devices: [(token: String, environment: String, active: Bool)] = []
            for d in 0..<Int.random(in: 0...2, using: &rng) {
                devices.append((String(format: "%04x%04x", i, d), rng.pick(["production", "sandbox"]), rng.chance(0.8)))
            }
            subscribers.append(
                FixtureSubscriber(
                    id: String(format: "s%03d", i), attributes: a,
                    timezone: rng.chance(0.7)
                        ? rng.pick(["Europe/Berlin", "America/New_York", "America/Chicago"]) : nil,
                    locale: rng.chance(0.7) ? rng.pick(["de-DE", "en-US", "fr-FR"]) : nil,
                    createdAt: now - Int64.random(in: 0...(100 * Self.day), using: &rng) / 1_000_000 * 1_000_000,
                    topics: topics, devices: devices))
        }
        // Anonymous installations: some are subscribers of their own, some are aliased to a
        // subscriber (and some of those still exist as a subscriber row too).
        for i in 0..<30 {
            let anonymous = String(format: "anon-%02d", i)
            if i % 3 != 0 { aliases[anonymous] = subscribers[Int.random(in: 0..<count, using: &rng)].id }
            if i % 2 == 0 {
                subscribers.append(
                    FixtureSubscriber(
                        id: anonymous, attributes: [:], timezone: nil, locale: nil,
                        createdAt: now - 5 * Self.day, topics: [], devices: []))
            }
        }
        let eventNames = ["workout.completed", "app.opened", "cart.checked_out", "page.viewed"]
        let owners = subscribers.map(\.id) + aliases.keys.sorted()
        for n in 0..<2400 {
            let owner = rng.pick(owners)
            var data: [String: JSONValue] = [:]
            if rng.chance(0.8) {
                data["total"] = rng.chance(0.85) ? .int(Int64.random(in: 0...100, using: &rng)) : "50"
            }
            if rng.chance(0.7) { data["currency"] = rng.pick(["EUR", "USD", 1]) }
            if rng.chance(0.6) { data["items"] = ["count": .int(Int64.random(in: 0...4, using: &rng))] }
            // Mostly the last 60 days; a few just ahead of now (must not count for within:).
            let offset =
                rng.chance(0.02)
                ? -Int64.random(in: 1...3_600, using: &rng) * 1_000_000
                : Int64.random(in: 0...(60 * Self.day), using: &rng)
            events.append(
                FixtureEvent(
                    id: "e\(n)", name: rng.pick(eventNames), storedUnder: owner,
                    data: .object(data), occurredAt: now - offset))
        }
    }

    /// The events that are `subscriber`'s: stored under its id, or under an anonymous id aliased to it.
    func events(of subscriber: String) -> [FixtureEvent] {
        events.filter { $0.storedUnder == subscriber || aliases[$0.storedUnder] == subscriber }
    }

    func subject(_ s: FixtureSubscriber) -> AudienceSubject {
        AudienceSubject(
            attributes: .object(s.attributes), timezone: s.timezone, locale: s.locale,
            createdAtMicroseconds: s.createdAt, topics: s.topics,
            devices: s.devices.map { AudienceDevice(environment: $0.environment, active: $0.active) },
            events: events(of: s.id).map {
                AudienceEvent(name: $0.name, data: $0.data, occurredAtMicroseconds: $0.occurredAt)
            })
    }

    /// Writes the fixtures for `tenant` (creating the workspace and tenant rows).
    func insert(into postgres: PostgresClient, tenant: UUID) async throws {
        let workspace = UUID()
        try await postgres.execute("INSERT INTO workspaces (id, name) VALUES ($1::uuid, 'w')", [workspace])
        try await postgres.execute(
            "INSERT INTO tenants (id, workspace_id, name) VALUES ($1::uuid, $2::uuid, 't')", [tenant, workspace])
        _ = try await postgres.insert(
            into: "subscribers", columns: ["tenant_id", "id", "attributes", "timezone", "locale", "created_at"],
            rows: subscribers.map { s in
                [
                    tenant, s.id, JSONValue.object(s.attributes), s.timezone, s.locale,
                    EventTimestamp.format(microseconds: s.createdAt)
                ]
            })
        _ = try await postgres.insert(
            into: "topics", columns: ["tenant_id", "key"],
            rows: ["sports", "news", "deals"].map { [tenant, $0] })
        _ = try await postgres.insert(
            into: "topic_subscriptions", columns: ["tenant_id", "topic_key", "subscriber_id"],
            rows: subscribers.flatMap { s in s.topics.map { [tenant, $0, s.id] } })
        _ = try await postgres.insert(
            into: "devices", columns: ["tenant_id", "token", "subscriber_id", "environment", "active"],
            rows: subscribers.flatMap { s in s.devices.map { [tenant, $0.token, s.id, $0.environment, $0.active] } })
        _ = try await postgres.insert(
            into: "subscriber_aliases", columns: ["tenant_id", "anonymous_id", "subscriber_id"],
            rows: aliases.map { [tenant, $0.key, $0.value] })
        _ = try await postgres.insert(
            into: "events", columns: ["tenant_id", "event_id", "name", "subscriber_id", "data", "occurred_at"],
            rows: events.map { e in
                [tenant, e.id, e.name, e.storedUnder, e.data, EventTimestamp.format(microseconds: e.occurredAt)]
            })
    }
}

/// A migrated schema of the test's own.
enum AudienceDatabase {
    static func migrated(_ prefix: String) async throws -> PostgresClient {
        let postgres = try await PostgresTestSupport.client(schema: TestEnvironment.uniqueName(prefix))
        _ = try await Migrator(client: postgres, logger: .silent()).migrate()
        return postgres
    }

    /// All matching ids by walking keyset pages of `pageSize`.
    static func pagedIDs(
        _ postgres: PostgresClient, _ expression: AudienceExpression, tenant: UUID, now: Date,
        pageSize: Int
    ) async throws -> [String] {
        var ids: [String] = []
        var cursor: String?
        while true {
            let query = AudienceQuery.page(expression, tenantId: tenant, after: cursor, limit: pageSize, now: now)
            let page = try await postgres.query(query.sql, query.parameters).map { try $0.decode(String.self, at: 0) }
            ids += page
            guard page.count == pageSize else { return ids }
            cursor = page.last
        }
    }

    static func count(_ postgres: PostgresClient, _ expression: AudienceExpression, tenant: UUID, now: Date)
        async throws -> Int
    {
        let query = AudienceQuery.count(expression, tenantId: tenant, now: now)
        guard let row = try await postgres.query(query.sql, query.parameters).first else { return -1 }
        return Int(try row.decode(Int64.self, at: 0))
    }
}
