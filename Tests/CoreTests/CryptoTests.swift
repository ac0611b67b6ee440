import BuzzKitCrypto
import BuzzKitWire
import Testing

@Suite struct CryptoTests {
    @Test func sha256MatchesTheKnownVector() {
        #expect(Digest.sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func hmacMatchesRFC4231Case2() {
        let mac = Digest.hmacSHA256(key: Array("Jefe".utf8), message: Array("what do ya want for nothing?".utf8))
        #expect(Hex.string(mac) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    @Test func base64URLRoundTripsWithoutPadding() {
        let bytes: [UInt8] = [0xFB, 0xFF, 0x00, 0x10]
        let text = Base64URL.encode(bytes)
        #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
        #expect(Base64URL.decode(text) == bytes)
    }

    @Test func es256SignaturesVerifyAndTamperingIsDetected() throws {
        let key = ES256PrivateKey.generate()
        let message = Array("header.claims".utf8)
        let signature = try key.sign(message)
        #expect(signature.count == 64)
        let publicKey = try ES256PublicKey(pem: key.publicKeyPEM)
        #expect(publicKey.verify(signature: signature, message: message))
        #expect(!publicKey.verify(signature: signature, message: Array("header.claimz".utf8)))
        var flipped = signature
        flipped[10] ^= 1
        #expect(!publicKey.verify(signature: flipped, message: message))
    }

    @Test func es256KeysRoundTripThroughPKCS8PEM() throws {
        let key = ES256PrivateKey.generate()
        #expect(key.pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try ES256PrivateKey(pem: key.pem)
        let signature = try reloaded.sign(Array("m".utf8))
        #expect(try ES256PublicKey(pem: key.publicKeyPEM).verify(signature: signature, message: Array("m".utf8)))
        #expect(throws: CryptoError.self) { try ES256PrivateKey(pem: "not a key") }
    }

    @Test func aesGCMSealsOpensAndRejectsTampering() throws {
        let box = try AESGCM(key: SecureRandom.bytes(32))
        let secret = Array("-----BEGIN PRIVATE KEY-----".utf8)
        let sealed = try box.seal(secret, associatedData: Array("tenant-1".utf8))
        #expect(sealed.count == secret.count + 28)
        #expect(try box.open(sealed, associatedData: Array("tenant-1".utf8)) == secret)
        #expect(throws: CryptoError.self) { try box.open(sealed, associatedData: Array("tenant-2".utf8)) }
        var tampered = sealed
        tampered[14] ^= 1
        #expect(throws: CryptoError.self) { try box.open(tampered, associatedData: Array("tenant-1".utf8)) }
        #expect(throws: CryptoError.self) { try AESGCM(key: [1, 2, 3]) }
    }
}
