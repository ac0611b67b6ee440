import Testing

@testable import GatewayApp

/// The shared field checks, value by value (the routes' validation tests cover how problems are
/// reported; these pin down what each rule accepts).
@Suite("Gateway field rules")
struct FieldRulesTests {
    @Test(arguments: ["en", "fil", "en-US", "de_DE", "zh-Hant-TW", "es-419", "sr-Latn-RS", "en-US-x-twain", "EN-us"])
    func acceptsLanguageTags(_ tag: String) {
        #expect(FieldRules.locale(tag) == nil)
    }

    @Test(arguments: [
        "", "e", "engl", "12-US", "en-", "-US", "en--US", "en-abcdefghi", "é-FR", "en US", "en-US.UTF-8", "en-ü"
    ])
    func refusesAnythingElse(_ tag: String) {
        #expect(FieldRules.locale(tag) == "must be a BCP 47 language tag such as en-US")
    }
}
