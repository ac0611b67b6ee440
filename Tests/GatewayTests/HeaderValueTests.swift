import BuzzKitCore
import Testing

@testable import GatewayApp

/// The byte-level header helpers every request goes through.
@Suite("Header values")
struct HeaderValueTests {
    @Test(arguments: [
        ("value", "value"), ("  value\t", "value"), ("\t a b \t", "a b"), ("", ""), (" \t ", ""),
        ("é ", "é"), ("\u{00A0}x", "\u{00A0}x")  // only spaces and tabs are optional whitespace
    ])
    func trimmingRemovesOnlySpacesAndTabs(_ raw: String, _ trimmed: String) {
        #expect(HTTPHeaders.trimmingWhitespace(raw) == trimmed)
    }

    @Test(
        arguments: [
            ("Bearer bk_live_abc", "bk_live_abc"), ("bearer bk_live_abc", "bk_live_abc"), ("BEARER bk_x", "bk_x"),
            ("  Bearer \t bk_x \t", "bk_x"),
            ("Bearer", nil), ("Bearer ", nil), ("Bearer  \t ", nil), ("Bearer\tbk_x", nil), ("Basic abc", nil),
            ("Bearerbk_x", nil), ("", nil), ("Bearxr bk_x", nil)
        ] as [(String, String?)])
    func bearerTokenNeedsTheSchemeAndAToken(_ header: String, _ token: String?) {
        #expect(Authenticator.bearerToken(header) == token)
    }
}
