import BuzzKitWire
import Foundation
import Testing

@Suite("Hex")
struct HexTests {
    /// Every byte writes as `%02x` does and reads back, in either case; non-digits read as nil.
    @Test func everyByteRoundTrips() {
        let all = (0...255).map { UInt8($0) }
        #expect(Hex.string(all) == all.map { String(format: "%02x", $0) }.joined())
        for byte in all {
            let high = Hex.digit(byte >> 4)
            let low = Hex.digit(byte)
            #expect(Hex.value(of: high).map { $0 << 4 | Hex.value(of: low)! } == byte)
            let upper = Array(String(decoding: [high, low], as: UTF8.self).uppercased().utf8)
            #expect(Hex.value(of: upper[0]).map { $0 << 4 | Hex.value(of: upper[1])! } == byte)
        }
        for other in "gGz /:@`-".utf8 { #expect(Hex.value(of: other) == nil) }
    }
}
