import BuzzKitAudience
import BuzzKitPostgres
import BuzzKitTestSupport
import BuzzKitWire
import Foundation
import Testing

/// The reference: hand-written predicates over the fixtures, independent of the parser, the
/// evaluator and the compiler.
struct Reference {
    let fixtures: AudienceFixtures
    let s: FixtureSubscriber

    /// The value at a dotted path below `root` (nil when any step is missing or not an object).
    static func value(_ root: JSONValue, _ path: [String]) -> JSONValue? {
        var value = root
        for key in path {
            guard case .object(let o) = value, let next = o[key] else { return nil }
            value = next
        }
        return value
    }
    static func number(_ value: JSONValue?) -> Double? {
        switch value {
        case .int(let i)?: return Double(i)
        case .double(let d)?: return d
        default: return nil
        }
    }
    func attr(_ path: String...) -> JSONValue? { Self.value(.object(s.attributes), path) }
    func string(_ path: String...) -> String? {
        if case .string(let t)? = Self.value(.object(s.attributes), path) { return t }
        return nil
    }
    func number(_ path: String...) -> Double? { Self.number(Self.value(.object(s.attributes), path)) }
    func bool(_ key: String) -> Bool? { if case .bool(let b)? = attr(key) { return b } else { return nil } }
    func bytes(_ t: String) -> [UInt8] { Array(t.utf8) }

    /// Events of this subscriber named `name`, in the window [now - days, now] when days is given.
    func events(_ name: String, days: Double? = nil, hours: Double? = nil) -> [FixtureEvent] {
        let window: Int64? = days.map { Int64($0 * 86_400) * 1_000_000 } ?? hours.map { Int64($0 * 3600) * 1_000_000 }
        return fixtures.events(of: s.id).filter { e in
            e.name == name && (window.map { e.occurredAt >= fixtures.now - $0 && e.occurredAt <= fixtures.now } ?? true)
        }
    }
    func number(in data: JSONValue, _ path: String...) -> Double? { Self.number(Self.value(data, path)) }
    func hasDevice(_ environment: String? = nil) -> Bool {
        s.devices.contains { $0.active && (environment == nil || $0.environment == environment) }
    }
}

struct ThreeWayCase: Sendable, CustomTestStringConvertible {
    var text: String
    var reference: @Sendable (Reference) -> Bool
    var testDescription: String { text }
    init(_ text: String, _ reference: @escaping @Sendable (Reference) -> Bool) {
        self.text = text
        self.reference = reference
    }
}

/// One shared database for the whole table: migrated once, fixtures inserted once.
actor ThreeWayDatabase {
    static let shared = ThreeWayDatabase()
    static let now: Int64 = (EventTimestamp.microseconds(Date()) / 1_000_000) * 1_000_000
    static let fixtures = AudienceFixtures(seed: 0xB022_C17, now: now)
    static let tenant = UUID()
    static let otherTenant = UUID()
    private var client: PostgresClient?

    func postgres() async throws -> PostgresClient {
        if let client { return client }
        let postgres = try await AudienceDatabase.migrated("aud3way")
        try await Self.fixtures.insert(into: postgres, tenant: Self.tenant)
        // Another tenant with the same ids and different data: must never leak into the first.
        try await AudienceFixtures(seed: 77, now: Self.now).insert(into: postgres, tenant: Self.otherTenant)
        client = postgres
        return postgres
    }
}

let createdAtCutoff = ThreeWayDatabase.now - 30 * AudienceFixtures.day
let createdAtCutoffText = EventTimestamp.format(microseconds: createdAtCutoff)

let threeWayCases: [ThreeWayCase] = [
    ThreeWayCase(#"plan == "pro""#) { $0.string("plan") == "pro" },
    ThreeWayCase(#"plan != "pro""#) { r in r.string("plan").map { $0 != "pro" } ?? false },
    ThreeWayCase(#"plan in ["pro", "team", 5]"#) { r in
        ["pro", "team"].contains(r.string("plan") ?? "-") || r.number("plan") == 5
    },
    ThreeWayCase(#"not plan == "pro""#) { $0.string("plan") != "pro" },
    ThreeWayCase("plan == 5") { $0.number("plan") == 5 },
    ThreeWayCase("plan == true") { $0.attr("plan") == .bool(true) },
    ThreeWayCase("age >= 18") { ($0.number("age") ?? -1) >= 18 },
    ThreeWayCase("age < 30.5") { r in r.number("age").map { $0 < 30.5 } ?? false },
    ThreeWayCase("age == 30") { $0.number("age") == 30 },
    ThreeWayCase(#"age == "30""#) { $0.string("age") == "30" },
    ThreeWayCase("age != 30") { r in r.number("age").map { $0 != 30 } ?? false },
    ThreeWayCase("exists(age)") { r in r.attr("age").map { $0 != .null } ?? false },
    ThreeWayCase("profile.age > 40") { ($0.number("profile", "age") ?? -1) > 40 },
    ThreeWayCase(#"profile.address.country == "DE""#) { $0.string("profile", "address", "country") == "DE" },
    ThreeWayCase(#"profile.city startsWith "Ber""#) {
        $0.string("profile", "city")?.utf8.starts(with: "Ber".utf8) ?? false
    },
    ThreeWayCase(#"name startsWith "A""#) { $0.string("name")?.utf8.starts(with: "A".utf8) ?? false },
    ThreeWayCase(#"name > "B""#) { r in
        r.string("name").map { r.bytes("B").lexicographicallyPrecedes(r.bytes($0)) } ?? false
    },
    ThreeWayCase(#"name <= "anna""#) { r in
        r.string("name").map { !r.bytes("anna").lexicographicallyPrecedes(r.bytes($0)) } ?? false
    },
    ThreeWayCase("exists(email)") { r in r.attr("email").map { $0 != .null } ?? false },
    ThreeWayCase("not exists(profile.age)") { r in (r.attr("profile", "age").map { $0 != .null } ?? false) == false },
    ThreeWayCase("vip == true") { $0.bool("vip") == true },
    ThreeWayCase("vip != false") { $0.bool("vip") == true },
    ThreeWayCase(#"country in ["DE", "AT"] and plan == "pro""#) { r in
        ["DE", "AT"].contains(r.string("country") ?? "") && r.string("plan") == "pro"
    },
    ThreeWayCase(#"(country == "US" or country == "FR") and not vip == true"#) { r in
        (r.string("country") == "US" || r.string("country") == "FR") && r.bool("vip") != true
    },
    ThreeWayCase(#"timezone == "Europe/Berlin""#) { $0.s.timezone == "Europe/Berlin" },
    ThreeWayCase(#"locale != "en-US""#) { r in r.s.locale.map { $0 != "en-US" } ?? false },
    ThreeWayCase(#"not locale == "en-US""#) { $0.s.locale != "en-US" },
    ThreeWayCase(#"exists(locale) and locale in ["de-DE", "fr-FR"]"#) {
        ["de-DE", "fr-FR"].contains($0.s.locale ?? "")
    },
    ThreeWayCase(#"timezone startsWith "America/""#) { $0.s.timezone?.hasPrefix("America/") ?? false },
    ThreeWayCase(#"createdAt >= "\#(createdAtCutoffText)""#) { $0.s.createdAt >= createdAtCutoff },
    ThreeWayCase(#"in_topic("sports")"#) { $0.s.topics.contains("sports") },
    ThreeWayCase(#"in_topic("sports") and not in_topic("news")"#) {
        $0.s.topics.contains("sports") && !$0.s.topics.contains("news")
    },
    ThreeWayCase("has_device()") { $0.hasDevice() },
    ThreeWayCase(#"has_device(environment: "production")"#) { $0.hasDevice("production") },
    ThreeWayCase(#"not has_device(environment: "sandbox")"#) { !$0.hasDevice("sandbox") },
    ThreeWayCase(#"did("workout.completed", within: "7d")"#) { !$0.events("workout.completed", days: 7).isEmpty },
    ThreeWayCase(#"not did("workout.completed", within: "7d")"#) { $0.events("workout.completed", days: 7).isEmpty },
    ThreeWayCase(#"did("workout.completed")"#) { !$0.events("workout.completed").isEmpty },
    ThreeWayCase(#"did("cart.checked_out", where: total > 40)"#) { r in
        r.events("cart.checked_out").contains { (r.number(in: $0.data, "total") ?? -1) > 40 }
    },
    ThreeWayCase(#"did("cart.checked_out", within: "30d", where: total > 40 and currency == "EUR")"#) { r in
        r.events("cart.checked_out", days: 30).contains { e in
            (r.number(in: e.data, "total") ?? -1) > 40 && e.data["currency"] == .string("EUR")
        }
    },
    ThreeWayCase(#"count("app.opened", within: "30d") >= 3"#) { $0.events("app.opened", days: 30).count >= 3 },
    ThreeWayCase(#"count("app.opened", within: "30d") < 2"#) { $0.events("app.opened", days: 30).count < 2 },
    ThreeWayCase(#"count("app.opened") == 0"#) { $0.events("app.opened").isEmpty },
    ThreeWayCase(#"count("app.opened") != 4"#) { $0.events("app.opened").count != 4 },
    ThreeWayCase(#"count("page.viewed", within: "2w", where: items.count >= 2) > 1"#) { r in
        r.events("page.viewed", days: 14).filter { (r.number(in: $0.data, "items", "count") ?? -1) >= 2 }.count > 1
    },
    ThreeWayCase(#"did("app.opened", within: "12h") or in_topic("deals")"#) {
        !$0.events("app.opened", hours: 12).isEmpty || $0.s.topics.contains("deals")
    },
    ThreeWayCase("`score` <= 2.5 and score > -1") { r in r.number("score").map { $0 <= 2.5 && $0 > -1 } ?? false },
    ThreeWayCase(#"not (plan == "free" or (age < 18 and exists(email)))"#) { r in
        !(r.string("plan") == "free"
            || ((r.number("age").map { $0 < 18 } ?? false) && (r.attr("email").map { $0 != .null } ?? false)))
    },
    ThreeWayCase(#"`weird key` == "x" or `weird key` == 1"#) {
        $0.string("weird key") == "x" || $0.number("weird key") == 1
    },
    ThreeWayCase(
        #"did("workout.completed", within: "60d") and count("workout.completed", within: "60d") <= 2 and has_device()"#
    ) { r in
        let n = r.events("workout.completed", days: 60).count
        return n >= 1 && n <= 2 && r.hasDevice()
    }
]

@Suite("Audience: evaluator, compiled SQL and reference agree", .requiresPostgres)
struct AudienceThreeWayTests {
    @Test(arguments: threeWayCases)
    func agree(_ testCase: ThreeWayCase) async throws {
        let postgres = try await ThreeWayDatabase.shared.postgres()
        let fixtures = ThreeWayDatabase.fixtures
        let now = Date(timeIntervalSince1970: Double(ThreeWayDatabase.now) / 1_000_000)
        let expression = try AudienceExpression.parse(testCase.text)

        let reference = Set(
            fixtures.subscribers.filter { testCase.reference(Reference(fixtures: fixtures, s: $0)) }.map(\.id))
        let evaluated = Set(
            fixtures.subscribers.filter { expression.matches(fixtures.subject($0), now: now) }.map(\.id))
        let paged = try await AudienceDatabase.pagedIDs(
            postgres, expression, tenant: ThreeWayDatabase.tenant, now: now, pageSize: 17)
        let count = try await AudienceDatabase.count(postgres, expression, tenant: ThreeWayDatabase.tenant, now: now)
        let allQuery = AudienceQuery.all(expression, tenantId: ThreeWayDatabase.tenant, now: now)
        let all = try await postgres.query(allQuery.sql, allQuery.parameters).map { try $0.decode(String.self, at: 0) }
        #expect(all == paged, "one statement and keyset pages return the same ids in the same order")
        // The plans the services run: the same statements after AudienceQuery.settings (merge
        // joins and sorted groupings only) must select the same subscribers.
        let countQuery = AudienceQuery.count(expression, tenantId: ThreeWayDatabase.tenant, now: now)
        let (settledAll, settledCount) = try await postgres.withTransaction { tx in
            try await tx.execute(AudienceQuery.settings)
            let ids = try await tx.query(allQuery.sql, allQuery.parameters).map { try $0.decode(String.self, at: 0) }
            let count = try await tx.query(countQuery.sql, countQuery.parameters).first.map {
                try $0.decode(Int64.self, at: 0)
            }
            return (ids, count)
        }
        #expect(settledAll == paged, "with AudienceQuery.settings: the same ids in the same order")
        #expect(settledCount == Int64(reference.count), "with AudienceQuery.settings: the same count")

        #expect(
            evaluated == reference,
            "evaluator vs reference: extra \(evaluated.subtracting(reference).sorted()), missing \(reference.subtracting(evaluated).sorted())"
        )
        #expect(
            Set(paged) == reference,
            "SQL vs reference: extra \(Set(paged).subtracting(reference).sorted()), missing \(reference.subtracting(Set(paged)).sorted())"
        )
        #expect(paged == paged.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }, "pages in id order")
        #expect(paged.count == Set(paged).count, "no id twice across pages")
        #expect(count == reference.count)
    }

    @Test func casesAreNotTrivial() {
        // Every case must select some but not all subscribers, or it proves little.
        let fixtures = ThreeWayDatabase.fixtures
        for testCase in threeWayCases {
            let n = fixtures.subscribers.filter { testCase.reference(Reference(fixtures: fixtures, s: $0)) }.count
            #expect(
                n > 0 && n < fixtures.subscribers.count,
                "\(testCase.text) selects \(n) of \(fixtures.subscribers.count)")
        }
    }
}
