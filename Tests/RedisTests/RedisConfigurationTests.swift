import BuzzKitRedis
import Testing

@Suite struct RedisConfigurationTests {
    @Test(arguments: [
        ("redis://127.0.0.1:6380", "127.0.0.1", 6380, nil as String?, 0),
        ("redis://:s3cret@cache.local:7000/3", "cache.local", 7000, "s3cret", 3),
        ("redis://localhost", "localhost", 6379, nil, 0),
        ("redis://app:pw%40x@h:1/0", "h", 1, "pw@x", 0)
    ])
    func parsesURLs(url: String, host: String, port: Int, password: String?, db: Int) throws {
        let configuration = try RedisConfiguration(url: url)
        #expect(configuration.host == host)
        #expect(configuration.port == port)
        #expect(configuration.password == password)
        #expect(configuration.database == db)
        #expect(configuration.poolSize == 4)
        #expect(configuration.connectTimeout == .seconds(2))
        #expect(configuration.commandTimeout == .seconds(5))
    }

    @Test func neverShowsThePassword() throws {
        let configuration = try RedisConfiguration(url: "redis://:topsecret@h:1/2")
        #expect(!configuration.description.contains("topsecret"))
        #expect(configuration.description == "redis://:***@h:1/2")
    }

    @Test(arguments: ["http://h:1", "redis://", "redis://h:1/notanumber"])
    func rejectsBadURLs(url: String) {
        #expect(throws: RedisError.self) { try RedisConfiguration(url: url) }
    }

    @Test func parsesStreamIDs() {
        #expect(StreamEntryID("1712-3") == StreamEntryID(milliseconds: 1712, sequence: 3))
        #expect(StreamEntryID("5") == StreamEntryID(milliseconds: 5, sequence: 0))
        #expect(StreamEntryID("x-1") == nil)
        #expect(StreamEntryID("1-2")! < StreamEntryID("1-10")!)
        #expect(StreamEntryID("2-0")! > StreamEntryID("1-99")!)
        #expect(
            StreamEntryID("18446744073709551615-18446744073709551615")
                == StreamEntryID(milliseconds: .max, sequence: .max))
        for bad in ["", "-", "1-", "-1", "1-2-3", "18446744073709551616-0", "1-18446744073709551616", " 1-2", "1-2a"] {
            #expect(StreamEntryID(bad) == nil, "\(bad)")
        }
    }
}
