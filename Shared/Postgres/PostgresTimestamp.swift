import BuzzKitWire
import Foundation

/// PostgreSQL's text form of `timestamptz`, `timestamp` and `date`, without `DateFormatter`.
///
/// Parses `YYYY-MM-DD[ |T]HH:MM:SS[.fraction][Z|±HH[:MM[:SS]]][ BC]` and a bare date; a missing
/// offset means UTC. Writes UTC with microseconds, the server's own precision. `infinity` and
/// `-infinity` are not representable as `Date` and fail to decode.
enum PostgresTimestamp {
    static func format(_ date: Date) -> String {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        return format(microseconds: Int64(max(min(micros, 9.0e18), -9.0e18)))
    }

    /// Microseconds since 1970 as UTC text with microseconds (`2026-03-01 12:00:00.250000+00`,
    /// ` BC` for years before 1).
    static func format(microseconds: Int64) -> String {
        String(decoding: bytes(microseconds: microseconds), as: UTF8.self)
    }

    /// The same text as bytes, without an intermediate String (COPY rows on the ingest hot path).
    static func bytes(microseconds: Int64) -> [UInt8] {
        let t = CivilCalendar.dateTime(microseconds: microseconds)
        let bc = t.year <= 0
        var out: [UInt8] = []
        out.reserveCapacity(32)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            while divisor * 10 <= value { divisor *= 10 }
            var value = value
            while divisor > 0 {
                out.append(UInt8(ascii: "0") + UInt8(value / divisor))
                value %= divisor
                divisor /= 10
            }
        }
        digits(bc ? 1 - t.year : t.year, 4)
        out.append(UInt8(ascii: "-"))
        digits(t.month, 2)
        out.append(UInt8(ascii: "-"))
        digits(t.day, 2)
        out.append(UInt8(ascii: " "))
        digits(t.hour, 2)
        out.append(UInt8(ascii: ":"))
        digits(t.minute, 2)
        out.append(UInt8(ascii: ":"))
        digits(t.second, 2)
        out.append(UInt8(ascii: "."))
        digits(t.microsecond, 6)
        out.append(contentsOf: "+00".utf8)
        if bc { out.append(contentsOf: " BC".utf8) }
        return out
    }

    static func parse(_ bytes: UnsafeRawBufferPointer) -> Date? {
        var scanner = Scanner(bytes: bytes)
        guard let year = scanner.number(minDigits: 4), scanner.take("-"),
            let month = scanner.number(exactDigits: 2), scanner.take("-"),
            let day = scanner.number(exactDigits: 2), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        var seconds = 0
        var fraction = 0.0
        var offset = 0
        if scanner.take(" ") || scanner.take("T") || scanner.take("t") {
            guard let h = scanner.number(exactDigits: 2), scanner.take(":"),
                let mi = scanner.number(exactDigits: 2), h <= 24, mi < 60
            else { return nil }
            var s = 0
            if scanner.take(":") {
                guard let sec = scanner.number(exactDigits: 2), sec <= 60 else { return nil }
                s = sec
                if scanner.take(".") {
                    var scale = 0.1
                    var digits = 0
                    while let digit = scanner.digit() {
                        fraction += Double(digit) * scale
                        scale /= 10
                        digits += 1
                    }
                    guard digits > 0 else { return nil }
                }
            }
            seconds = h * 3600 + mi * 60 + s
            if scanner.take("Z") || scanner.take("z") {
                offset = 0
            } else if let sign = scanner.sign() {
                guard let oh = scanner.number(exactDigits: 2) else { return nil }
                var om = 0
                var os = 0
                if scanner.take(":") {
                    guard let v = scanner.number(exactDigits: 2) else { return nil }
                    om = v
                    if scanner.take(":") {
                        guard let v2 = scanner.number(exactDigits: 2) else { return nil }
                        os = v2
                    }
                } else if let v = scanner.number(exactDigits: 2) {
                    om = v  // +0530
                }
                offset = sign * (oh * 3600 + om * 60 + os)
            }
        }
        var y = year
        if scanner.take(" BC") { y = 1 - year }
        guard scanner.atEnd else { return nil }
        let days = CivilCalendar.days(year: y, month: month, day: day)
        let whole = Double(days) * 86_400 + Double(seconds - offset)
        return Date(timeIntervalSince1970: whole + fraction)
    }

    private struct Scanner {
        let bytes: UnsafeRawBufferPointer
        var index = 0
        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }
        var atEnd: Bool { index == bytes.count }

        mutating func take(_ literal: StaticString) -> Bool {
            let n = literal.utf8CodeUnitCount
            guard index + n <= bytes.count else { return false }
            for i in 0..<n where bytes[index + i] != literal.utf8Start[i] { return false }
            index += n
            return true
        }

        mutating func digit() -> Int? {
            guard index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 else { return nil }
            defer { index += 1 }
            return Int(bytes[index] - 48)
        }

        mutating func sign() -> Int? {
            if take("+") { return 1 }
            if take("-") { return -1 }
            return nil
        }

        mutating func number(exactDigits: Int) -> Int? {
            let start = index
            var value = 0
            for _ in 0..<exactDigits {
                guard let d = digit() else {
                    index = start
                    return nil
                }
                value = value * 10 + d
            }
            return value
        }

        mutating func number(minDigits: Int) -> Int? {
            let start = index
            var value = 0
            while let d = digit(), index - start <= 9 { value = value * 10 + d }
            guard index - start >= minDigits else {
                index = start
                return nil
            }
            return value
        }
    }
}
