import BuzzKitWire
import Synchronization

/// Request ids: the client's own when it sent a usable one, a random one otherwise.
enum RequestID {
    /// The incoming `X-Request-Id` when it is 1-128 characters of `A-Z a-z 0-9 . _ : -`, else a new id.
    static func accepting(_ incoming: String?) -> String {
        if let incoming, isValid(incoming) { return incoming }
        return generate()
    }

    static func isValid(_ id: String) -> Bool {
        let utf8 = id.utf8
        guard !utf8.isEmpty, utf8.count <= 128 else { return false }
        return utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
                || c == 0x2E || c == 0x5F || c == 0x3A || c == 0x2D
        }
    }

    /// 24 lowercase hex digits: 32 random bits chosen once per process, then 64 bits of
    /// splitmix64 over a per-process counter (a bijection, so ids never repeat within a process,
    /// and no `getrandom` system call per request: that cost 3% of a trivial request).
    static func generate() -> String {
        let n = counter.add(1, ordering: .relaxed).newValue
        var z = seed &+ n &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return String(unsafeUninitializedCapacity: 24) { buffer in
            for i in 0..<8 { buffer[i] = Hex.digit(processTag >> (28 - 4 * UInt32(i))) }
            for i in 0..<16 { buffer[8 + i] = Hex.digit(z >> (60 - 4 * UInt64(i))) }
            return 24
        }
    }

    private static let seed: UInt64 = UInt64.random(in: .min ... .max)
    private static let processTag: UInt32 = UInt32.random(in: .min ... .max)
    private static let counter = Atomic<UInt64>(0)
}
