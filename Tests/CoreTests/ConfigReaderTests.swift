import BuzzKitCore
import Testing

@Suite struct ConfigReaderTests {
    @Test func defaultsApplyWhenUnsetOrEmpty() throws {
        var reader = ConfigReader(environment: ["EMPTY": " "])
        #expect(reader.string("EMPTY", default: "x") == "x")
        #expect(reader.int("MISSING", default: 4) == 4)
        #expect(reader.duration("MISSING", default: .seconds(30)) == .seconds(30))
        try reader.validate()
    }

    @Test(arguments: [
        ("250ms", Duration.milliseconds(250)), ("30s", .seconds(30)), ("5m", .seconds(300)),
        ("1h", .seconds(3600)), ("1.5", .milliseconds(1500))
    ])
    func durations(text: String, expected: Duration) throws {
        var reader = ConfigReader(environment: ["D": text])
        #expect(reader.duration("D", default: .zero) == expected)
        try reader.validate()
    }

    @Test func everyInvalidValueIsReportedAtOnce() {
        var reader = ConfigReader(environment: ["A": "x", "B": "maybe", "C": "soon", "D": "99", "E": "loud"])
        _ = reader.int("A", default: 1)
        _ = reader.bool("B", default: true)
        _ = reader.duration("C", default: .seconds(1))
        _ = reader.int("D", default: 1, range: 1...10)
        _ = reader.logLevel("E", default: .info)
        do {
            try reader.validate()
            Issue.record("expected a configuration error")
        } catch {
            #expect(error.problems.count == 5)
            #expect(error.description.contains("A=x"))
        }
    }
}
