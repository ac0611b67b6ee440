internal import COpenSSL

/// An ES256 (ECDSA P-256, SHA-256) private key: APNs provider tokens are signed with it.
///
/// Loads Apple's `.p8` files (PKCS#8 PEM). Signatures are raw `r || s` (64 bytes), as JWT wants.
/// About 10k signatures/s on this machine: callers cache the tokens they sign.
public final class ES256PrivateKey: @unchecked Sendable {
    // Safe to share: the EVP_PKEY is never mutated after loading, and OpenSSL 3 allows concurrent
    // signing with one key as long as each operation uses its own EVP_MD_CTX (which `sign` does).
    private let key: OpaquePointer

    public init(pem: String) throws(CryptoError) {
        guard let key = Self.readPEM(pem, isPrivate: true) else {
            throw CryptoError(.invalidKey, "not a PEM-encoded EC P-256 private key")
        }
        guard EVP_PKEY_get_bits(key) == 256, EVP_PKEY_get_base_id(key) == EVP_PKEY_EC else {
            EVP_PKEY_free(key)
            throw CryptoError(.invalidKey, "the key is not an EC P-256 key")
        }
        self.key = key
    }

    private init(owning key: OpaquePointer) { self.key = key }

    /// A fresh random key (tests, the local demo tenant).
    public static func generate() -> ES256PrivateKey {
        guard let key = bk_generate_p256() else { preconditionFailure("P-256 key generation failed") }
        return ES256PrivateKey(owning: key)
    }

    deinit { EVP_PKEY_free(key) }

    /// The key as PKCS#8 PEM (what Apple's .p8 files hold).
    public var pem: String { Self.writePEM { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) } }

    /// The public half as SubjectPublicKeyInfo PEM.
    public var publicKeyPEM: String { Self.writePEM { PEM_write_bio_PUBKEY($0, key) } }

    /// Signs `message` with SHA-256; returns raw `r || s`, 64 bytes.
    public func sign(_ message: some Collection<UInt8>) throws(CryptoError) -> [UInt8] {
        guard let ctx = EVP_MD_CTX_new() else { throw CryptoError(.libraryFailure, "EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(ctx) }
        let input = Array(message)
        guard EVP_DigestSignInit(ctx, nil, EVP_sha256(), nil, key) == 1 else {
            throw CryptoError(.libraryFailure, "EVP_DigestSignInit failed")
        }
        var derLength = 0
        guard EVP_DigestSign(ctx, nil, &derLength, input, input.count) == 1 else {
            throw CryptoError(.libraryFailure, "EVP_DigestSign (size) failed")
        }
        var der = [UInt8](repeating: 0, count: derLength)
        guard EVP_DigestSign(ctx, &der, &derLength, input, input.count) == 1 else {
            throw CryptoError(.libraryFailure, "EVP_DigestSign failed")
        }
        return try Self.rawSignature(fromDER: Array(der[..<derLength]))
    }

    static func rawSignature(fromDER der: [UInt8]) throws(CryptoError) -> [UInt8] {
        let sig = der.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            var pointer = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &pointer, buffer.count)
        }
        guard let sig else { throw CryptoError(.libraryFailure, "d2i_ECDSA_SIG failed") }
        defer { ECDSA_SIG_free(sig) }
        var raw = [UInt8](repeating: 0, count: 64)
        let r = ECDSA_SIG_get0_r(sig)
        let s = ECDSA_SIG_get0_s(sig)
        let ok = raw.withUnsafeMutableBufferPointer { out in
            BN_bn2binpad(r, out.baseAddress, 32) == 32 && BN_bn2binpad(s, out.baseAddress! + 32, 32) == 32
        }
        guard ok else { throw CryptoError(.libraryFailure, "BN_bn2binpad failed") }
        return raw
    }

    static func readPEM(_ pem: String, isPrivate: Bool) -> OpaquePointer? {
        let bytes = Array(pem.utf8)
        return bytes.withUnsafeBufferPointer { buffer -> OpaquePointer? in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return isPrivate ? PEM_read_bio_PrivateKey(bio, nil, nil, nil) : PEM_read_bio_PUBKEY(bio, nil, nil, nil)
        }
    }

    static func writePEM(_ write: (OpaquePointer) -> Int32) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { return "" }
        var data: UnsafeMutablePointer<CChar>?
        let length = bk_bio_mem_data(bio, &data)
        guard let data, length > 0 else { return "" }
        return String(decoding: UnsafeRawBufferPointer(start: data, count: length), as: UTF8.self)
    }
}

/// The public half of an ES256 key, for verifying signatures (the APNs simulator side, tests).
public final class ES256PublicKey: @unchecked Sendable {
    // Safe to share: the EVP_PKEY is read-only after loading; each verification has its own context.
    private let key: OpaquePointer

    public init(pem: String) throws(CryptoError) {
        guard let key = ES256PrivateKey.readPEM(pem, isPrivate: false) else {
            throw CryptoError(.invalidKey, "not a PEM-encoded EC public key")
        }
        self.key = key
    }

    deinit { EVP_PKEY_free(key) }

    /// Checks a raw `r || s` signature over `message`.
    public func verify(signature: [UInt8], message: some Collection<UInt8>) -> Bool {
        guard signature.count == 64, let sig = ECDSA_SIG_new() else { return false }
        defer { ECDSA_SIG_free(sig) }
        let r = BN_bin2bn(signature, 32, nil)
        let s = signature.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress! + 32, 32, nil) }
        guard ECDSA_SIG_set0(sig, r, s) == 1 else { return false }
        var derPointer: UnsafeMutablePointer<UInt8>?
        let derLength = i2d_ECDSA_SIG(sig, &derPointer)
        guard derLength > 0, let derPointer else { return false }
        defer { CRYPTO_free(derPointer, #file, #line) }
        guard let ctx = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(ctx) }
        let input = Array(message)
        guard EVP_DigestVerifyInit(ctx, nil, EVP_sha256(), nil, key) == 1 else { return false }
        return EVP_DigestVerify(ctx, derPointer, Int(derLength), input, input.count) == 1
    }
}
