import BuzzKitWire
import Testing

/// `DecimalText` writes what `String(value)` writes, and `JSONWriter.int` through it too.
@Suite("decimal text")
struct DecimalTextTests {
    @Test(arguments: [0, 7, 9, 10, 42, -1, -10, 1_733_450_000_123, Int64.max, Int64.min])
    func writesAsStringDoes(value: Int64) {
        var bytes: [UInt8] = [UInt8(ascii: "x")]
        DecimalText.append(value, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "x" + String(value))
        var json = JSONWriter()
        json.int(value)
        #expect(json.string == String(value))
    }

    @Test func jsonWriterWritesWiderIntegersToo() {
        var json = JSONWriter()
        json.int(UInt64.max)
        #expect(json.string == String(UInt64.max))
    }
}
