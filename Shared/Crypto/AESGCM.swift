internal import COpenSSL

/// AES-256-GCM sealing for secrets at rest (tenants' APNs .p8 keys).
///
/// A sealed box is `nonce (12 bytes) || ciphertext || tag (16 bytes)`; a fresh random nonce per seal.
/// `associatedData` binds the box to its owner (e.g. the tenant id) so it cannot be moved to another row.
public struct AESGCM: Sendable {
    public static let keySize = 32
    private let key: [UInt8]

    public init(key: [UInt8]) throws(CryptoError) {
        guard key.count == Self.keySize else {
            throw CryptoError(.invalidKey, "an AES-256-GCM key is 32 bytes, got \(key.count)")
        }
        self.key = key
    }

    public func seal(_ plaintext: [UInt8], associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        let nonce = SecureRandom.bytes(12)
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError(.libraryFailure, "EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var ciphertext = [UInt8](repeating: 0, count: plaintext.count + 16)
        var tag = [UInt8](repeating: 0, count: 16)
        var length: Int32 = 0
        var total = 0
        guard EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce) == 1 else {
            throw CryptoError(.libraryFailure, "EVP_EncryptInit_ex failed")
        }
        if !associatedData.isEmpty {
            guard EVP_EncryptUpdate(ctx, nil, &length, associatedData, Int32(associatedData.count)) == 1 else {
                throw CryptoError(.libraryFailure, "EVP_EncryptUpdate (aad) failed")
            }
        }
        let ok = ciphertext.withUnsafeMutableBufferPointer { out -> Bool in
            guard EVP_EncryptUpdate(ctx, out.baseAddress, &length, plaintext, Int32(plaintext.count)) == 1 else {
                return false
            }
            total = Int(length)
            guard EVP_EncryptFinal_ex(ctx, out.baseAddress! + total, &length) == 1 else { return false }
            total += Int(length)
            return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, &tag) == 1
        }
        guard ok else { throw CryptoError(.libraryFailure, "AES-GCM encryption failed") }
        return nonce + ciphertext[..<total] + tag
    }

    public func open(_ box: [UInt8], associatedData: [UInt8] = []) throws(CryptoError) -> [UInt8] {
        guard box.count >= 28 else { throw CryptoError(.invalidInput, "a sealed box is at least 28 bytes") }
        let nonce = Array(box[0..<12])
        var tag = Array(box[(box.count - 16)...])
        let ciphertext = Array(box[12..<(box.count - 16)])
        guard let ctx = EVP_CIPHER_CTX_new() else { throw CryptoError(.libraryFailure, "EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var plaintext = [UInt8](repeating: 0, count: ciphertext.count + 16)
        var length: Int32 = 0
        var total = 0
        guard EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nil, key, nonce) == 1 else {
            throw CryptoError(.libraryFailure, "EVP_DecryptInit_ex failed")
        }
        if !associatedData.isEmpty {
            guard EVP_DecryptUpdate(ctx, nil, &length, associatedData, Int32(associatedData.count)) == 1 else {
                throw CryptoError(.libraryFailure, "EVP_DecryptUpdate (aad) failed")
            }
        }
        let ok = plaintext.withUnsafeMutableBufferPointer { out -> Bool in
            guard EVP_DecryptUpdate(ctx, out.baseAddress, &length, ciphertext, Int32(ciphertext.count)) == 1 else {
                return false
            }
            total = Int(length)
            guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, &tag) == 1 else { return false }
            guard EVP_DecryptFinal_ex(ctx, out.baseAddress! + total, &length) == 1 else { return false }
            total += Int(length)
            return true
        }
        guard ok else { throw CryptoError(.authenticationFailed, "the sealed box failed authentication") }
        return Array(plaintext[..<total])
    }
}
