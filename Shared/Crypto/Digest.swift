import BuzzKitWire
internal import COpenSSL

/// SHA-256 and HMAC-SHA-256, for API key hashes and request fingerprints.
public enum Digest {
    public static func sha256(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        let input = Array(bytes)
        input.withUnsafeBufferPointer { buffer in bk_sha256(buffer.baseAddress, buffer.count, &output) }
        return output
    }

    public static func sha256Hex(_ text: String) -> String { Hex.string(sha256(Array(text.utf8))) }

    public static func hmacSHA256(key: [UInt8], message: some Collection<UInt8>) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 32
        let input = Array(message)
        key.withUnsafeBufferPointer { keyBuffer in
            input.withUnsafeBufferPointer { messageBuffer in
                _ = HMAC(
                    EVP_sha256(), keyBuffer.baseAddress, Int32(keyBuffer.count),
                    messageBuffer.baseAddress, messageBuffer.count, &output, &length)
            }
        }
        return output
    }

    /// Compares two byte strings in time independent of where they differ.
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}

/// Cryptographically secure random bytes from OpenSSL's generator.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count)
        let ok = output.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(count)) }
        precondition(ok == 1, "the system random generator failed")
        return output
    }
}
