/// Decimal text of integers written straight into a byte buffer: the ledger's attempt logs and
/// array parameters write several numbers per delivery, and `String(value)` on the way cost a
/// conversion through the generic `description` each time.
public enum DecimalText {
    /// Appends `value` in decimal (a leading `-` when negative), as `String(value)` writes it.
    public static func append(_ value: Int64, to bytes: inout [UInt8]) {
        if value >= 0, value < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        // At most 20 digits and a sign; written backwards into a fixed scratch, then copied.
        var scratch: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &scratch) { raw in
            var position = raw.count
            var magnitude = value.magnitude
            repeat {
                position -= 1
                raw[position] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 {
                position -= 1
                raw[position] = UInt8(ascii: "-")
            }
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[position...]))
        }
    }
}
