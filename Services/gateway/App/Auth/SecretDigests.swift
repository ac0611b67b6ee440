import Synchronization

/// Presented secret -> its SHA-256, remembered, so a request with a key seen before costs no
/// SHA-256 (OpenSSL 3's one-shot digest fetches the algorithm on every call: about 6% of a
/// network thread's time under load). The mapping is a pure function, so nothing here needs
/// evicting on revocation: the record cache keyed by the digest stays the authority.
///
/// The secret itself is never stored: entries are keyed by a 128-bit fingerprint, two SipHash
/// values under a per-process random key. Using another secret's digest would need a string with
/// the same fingerprint as that secret, which cannot be found without knowing the secret (or
/// this process's key). At most `capacity` entries (default 50,000); when full, all are dropped.
final class SecretDigests: Sendable {
    struct Fingerprint: Hashable, Sendable {
        var low: Int
        var high: Int
    }

    let capacity: Int
    private let key: (UInt64, UInt64, UInt64, UInt64)
    private let digests = Mutex<[Fingerprint: [UInt8]]>([:])

    init(capacity: Int = 50_000) {
        self.capacity = capacity
        var generator = SystemRandomNumberGenerator()
        key = (generator.next(), generator.next(), generator.next(), generator.next())
    }

    /// The SHA-256 `compute` gives for `secret`, computed once per distinct secret.
    func digest(of secret: String, compute: (String) -> [UInt8]) -> [UInt8] {
        let fingerprint = fingerprint(secret)
        if let known = digests.withLock({ $0[fingerprint] }) { return known }
        let digest = compute(secret)
        digests.withLock { digests in
            if digests.count >= capacity { digests.removeAll(keepingCapacity: true) }
            digests[fingerprint] = digest
        }
        return digest
    }

    func fingerprint(_ secret: String) -> Fingerprint {
        var secret = secret
        return secret.withUTF8 { bytes in
            var first = Hasher(), second = Hasher()
            first.combine(key.0)
            first.combine(key.1)
            second.combine(key.2)
            second.combine(key.3)
            first.combine(bytes: UnsafeRawBufferPointer(bytes))
            second.combine(bytes: UnsafeRawBufferPointer(bytes))
            return Fingerprint(low: first.finalize(), high: second.finalize())
        }
    }

    var count: Int { digests.withLock { $0.count } }
}
