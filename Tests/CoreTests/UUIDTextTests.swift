import BuzzKitWire
import Foundation
import Testing

/// `UUID(uuidText:)` and `lowercasedText` must agree with Foundation's `UUID(uuidString:)` and
/// `uuidString` on every value they accept or refuse.
@Suite("UUID text")
struct UUIDTextTests {
    @Test func roundTripsLikeFoundation() {
        for _ in 0..<1000 {
            let uuid = UUID()
            #expect(uuid.lowercasedText == uuid.uuidString.lowercased())
            #expect(UUID(uuidText: uuid.lowercasedText) == uuid)
            #expect(UUID(uuidText: uuid.uuidString) == uuid)
            #expect(UUID(uuidText: Array(uuid.uuidString.utf8)) == uuid)
        }
        let edge = UUID(
            uuid: (0, 0x0F, 0xF0, 0xFF, 0x10, 0x9A, 0xAB, 0xBC, 0xCD, 0xDE, 0xEF, 0x01, 0x23, 0x45, 0x67, 0x89))
        #expect(edge.lowercasedText == "000ff0ff-109a-abbc-cdde-ef0123456789")
    }

    @Test(arguments: [
        "", "not-a-uuid", "00000000-0000-0000-0000-00000000000", "00000000-0000-0000-0000-0000000000000",
        "0000000000000000-0000-0000-000000000000", "00000000-0000-0000-0000_000000000000",
        "g0000000-0000-0000-0000-000000000000", "{00000000-0000-0000-0000-000000000000}",
        "00000000-0000-0000-0000-00000000000é"
    ])
    func refusesWhatFoundationRefuses(_ text: String) {
        #expect(UUID(uuidString: text) == nil)
        #expect(UUID(uuidText: text) == nil)
    }

    /// Foundation scans with `sscanf`, which skips a leading space; an id with one is not an id.
    @Test func refusesSpaces() {
        #expect(UUID(uuidText: " 0000000-0000-0000-0000-000000000000") == nil)
        #expect(UUID(uuidText: "00000000-0000-0000-0000-00000000000 ") == nil)
    }
}
