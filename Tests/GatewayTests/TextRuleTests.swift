import BuzzKitContracts
import BuzzKitWire
import Foundation
import Testing

@testable import GatewayApp

/// Every `TextRule` the API document states is checked by Swift code and stated as an ECMA-262
/// pattern with lengths (code points) and `x-max-utf8-bytes`; here the two are held equal on generated strings (edge cases plus random strings
/// over an alphabet that reaches every branch), with NSRegularExpression standing in for the
/// document's readers. A rule whose check drifts from its pattern fails here, naming the value.
@Suite("Text rules: the check and the documented pattern agree")
struct TextRuleTests {
    static let rules: [(String, TextRule)] = [
        ("identifier", FieldRules.identifierRule), ("key", FieldRules.keyRule),
        ("deviceToken", FieldRules.deviceTokenRule), ("locale", FieldRules.localeRule),
        ("wallClock", FieldRules.wallClockRule), ("bundleID", FieldRules.bundleIDRule),
        ("appleID", FieldRules.appleIDRule), ("name", FieldRules.nameRule), ("uuid", .uuid),
        ("installationToken", InstallationToken.rule), ("idempotencyKey", Idempotency.rule),
        ("installationAnonymousID", FieldRules.installationAnonymousIDRule),
        ("deepLink", MessageContent.deepLinkRule), ("image", MessageContent.imageRule),
        ("collapseId", MessageContent.collapseIdRule), ("eventName", EventRoutes.nameRule),
        ("version", FieldRules.versionRule), ("duration", WorkflowRules.durationRule)
    ]

    static let alphabet: [String] = [
        "a", "Z", "0", "9", "f", "F", "g", ".", "-", "_", ":", "/", " ", "$", "\u{0}", "\u{1F}",
        "\u{7F}", "\u{85}", "\u{9F}", "é", "ü", "😀", "h", "t", "p", "s", "H", "T", "P", "S",
        "%", "#", "[", "\\", "\n", "b", "k", "i", "n"
    ]

    static let edgeCases: [String] = [
        "", "a", "en", "en-US", "de_DE", "e", "en-", "EN-us", "zh-Hant-TW", "23:59", "24:00", "+1:00", "00:0a", "09:5",
        "com.example.app", "com", ".", "a.b_c", "ABCDE12345", "abcde12345", "ABCDE1234",
        "00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-00000000000g",
        "0000000000000000000000000000000000000",
        "bk_inst_" + String(repeating: "A", count: 43), "bk_inst_" + String(repeating: "A", count: 42),
        "myapp://orders/42", "myapp:", "1app://x", "https://x.example/a.png", "http://", "HTTPS://a b",
        String(repeating: "ab", count: 32), String(repeating: "ab", count: 33) + "a", "$app.opened", "app.opened",
        "a\u{0}b", "a\u{85}b", "a\u{7F}", "tab\there", "1", "0", "01", "+5", "2147483647", "2147483648", "9999999999",
        "1999999999", "2147483639", "214748364", "21474836470",
        "30s", "0s", "05m", "365d", "366d", "400d", "8760h", "8761h", "525600m", "525601m", "31536000s", "31536001s",
        "9999999999s", "1d", "d", "1", "36h", "299d", "359d", "364d", "99d", "8759h", "8700h", "1w"
    ]

    @Test(arguments: rules.map(\.0))
    func theCheckIsThePattern(_ name: String) throws {
        let rule = try #require(Self.rules.first { $0.0 == name }?.1)
        let pattern = try #require(rule.pattern, "\(name) has no pattern")
        let regex = try NSRegularExpression(pattern: pattern)
        var generator = SplitMix(
            seed: name.utf8.reduce(UInt64(1_469_598_103_934_665_603)) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 })
        var samples = Self.edgeCases
        for _ in 0..<3000 {
            let count = Int(generator.next() % 80)
            samples.append(
                (0..<count).map { _ in Self.alphabet[Int(generator.next() % UInt64(Self.alphabet.count))] }.joined())
        }
        for sample in samples {
            let range = NSRange(sample.startIndex..., in: sample)
            let matches =
                regex.firstMatch(in: sample, options: [.anchored], range: range).map { $0.range == range } ?? false
            let length = sample.unicodeScalars.count
            let documented =
                matches && (rule.minLength...rule.maxLength).contains(length)
                && sample.utf8.count <= (rule.maxUTF8Bytes ?? Int.max)
            #expect(
                rule.accepts(sample) == documented,
                "\(name): \(sample.unicodeScalars.map { String($0.value, radix: 16) })")
        }
    }

    @Test func everyPathParameterHasItsRule() {
        for route in GatewayRoute.table {
            #expect(Set(route.pathRules.keys) == Set(route.pathParameters), "\(route.method) \(route.path)")
        }
    }

    @Test func timeZonesAreTheDatabasesNames() {
        for name in ["UTC", "Etc/UTC", "Europe/Berlin", "Asia/Kolkata", "America/Argentina/Buenos_Aires", "GMT"] {
            #expect(FieldRules.timezone(name) == nil, "\(name)")
        }
        for name in ["Mars/Olympus", "", "posixrules", "zone.tab", "Europe", "europe/berlin"] {
            #expect(FieldRules.timezone(name) != nil, "\(name)")
        }
    }

    @Test func lengthsCountCodePointsAndBytesWhereTheRuleSaysSo() {
        let id = FieldRules.identifierRule
        #expect(id.accepts(String(repeating: "é", count: 256)))
        #expect(!id.accepts(String(repeating: "é", count: 257)))
        // e + a combining accent: two code points, one character to Swift; JSON Schema counts two.
        #expect(!id.accepts(String(repeating: "e\u{301}", count: 129)))
        let anonymous = FieldRules.installationAnonymousIDRule
        #expect(anonymous.accepts(String(repeating: "a", count: 128)))
        #expect(anonymous.problem(with: String(repeating: "é", count: 65)) == "must be at most 128 bytes of UTF-8")
    }
}

/// A small seeded generator (tests must be repeatable).
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
