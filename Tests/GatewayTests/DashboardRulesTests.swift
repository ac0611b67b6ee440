import Testing

@testable import GatewayApp

/// The pure rules behind the dashboard's routes, table-driven.
@Suite("Dashboard rules")
struct DashboardRulesTests {
    @Test(arguments: [
        ("\"abc\"", true), ("W/\"abc\"", true), ("\"x\", \"abc\"", true), (" \"x\" ,W/\"abc\" ", true), ("*", true),
        ("\"abcd\"", false), ("abc", false), ("", false), ("\"ab\"c\"", false)
    ])
    func ifNoneMatchNamesTheTag(header: String, matches: Bool) {
        #expect(DashboardSite.matches(header, "\"abc\"") == matches)
    }

    @Test(arguments: [
        ("app.js", true), ("style.css", true), ("a-b_c.1.js", true),
        (".env", false), ("..", false), ("a b.js", false), ("a%2e.js", false), ("é.js", false), ("", false)
    ])
    func onlyPlainFileNamesAreServed(name: String, safe: Bool) {
        #expect(DashboardSite.isSafeComponent(Substring(name)) == safe)
    }

    @Test(arguments: [
        ("2026-01-01T00:00:00.123456+00:00|00000000-0000-0000-0000-000000000001", true),
        ("2026-01-01T00:00:00Z|00000000-0000-0000-0000-000000000001", true),
        ("2026-13-01T00:00:00Z|00000000-0000-0000-0000-000000000001", false),
        ("9999-99-99T00:00:00Z|00000000-0000-0000-0000-000000000001", false),
        ("2026-01-01T00:00:00Z|not-a-uuid", false), ("2026-01-01T00:00:00Z", false),
        ("|00000000-0000-0000-0000-000000000001", false),
        ("now()|00000000-0000-0000-0000-000000000001", false)
    ])
    func messageCursorsCarryATimestampAndAnId(key: String, valid: Bool) {
        #expect((MessageRoutes.parseListKey(key) != nil) == valid)
    }
}
