import BuzzKitPostgres
import Testing

@Suite("PostgresConfiguration")
struct PostgresConfigurationTests {
    @Test func parsesURL() throws {
        let c = try PostgresConfiguration(
            url:
                "postgres://app:s%40cret@db.internal:6543/buzz?sslmode=require&pool_size=9&statement_timeout=1500&application_name=gw"
        )
        #expect(c.user == "app" && c.password == "s@cret" && c.host == "db.internal" && c.port == 6543)
        #expect(c.database == "buzz" && c.sslMode == "require" && c.poolSize == 9 && c.applicationName == "gw")
        #expect(c.statementTimeout == .milliseconds(1500))
        #expect(!c.description.contains("s@cret") && !c.description.contains("cret"))
    }

    @Test func defaults() throws {
        let c = try PostgresConfiguration(url: "postgresql://buzzkit@127.0.0.1/buzzkit")
        #expect(c.port == 5432 && c.poolSize == 4 && c.connectTimeout == .seconds(5) && c.statementTimeout == nil)
        #expect(c.password == nil && c.sslMode == "prefer" && c.applicationName == "buzzkit")
    }

    @Test(arguments: ["http://x/y", "postgres://u@h/db?pool_size=0", "postgres://u@h/db?bogus=1", "not a url"])
    func rejects(url: String) {
        #expect(throws: PostgresConfigurationError.self) { try PostgresConfiguration(url: url) }
    }
}
