import AsyncHTTPClient
import Crypto
import DiaryModels
import Foundation
import Hummingbird
import HummingbirdTesting
import PostgresClient
import S3Client
import Testing
import TestSupport
import _CryptoExtras
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// An RSA key standing in for Apple's, published as a JWKS file the server reads.
struct AppleTestKeys: Sendable {
    static let audience = "app.zutto-nikki.tests"
    static let kid = "test-key-1"
    static let shared: AppleTestKeys = try! AppleTestKeys()

    let privateKeyPEM: String
    let jwksPath: String

    init() throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let primitives = try key.publicKey.getKeyPrimitives()
        let jwks = #"{"keys":[{"kty":"RSA","kid":"\#(Self.kid)","use":"sig","alg":"RS256","n":"\#(Base64URL.encode(primitives.modulus))","e":"\#(Base64URL.encode(primitives.publicExponent))"}]}"#
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("apple-jwks-\(UUID().uuidString).json").path
        try Data(jwks.utf8).write(to: URL(fileURLWithPath: path))
        privateKeyPEM = key.pemRepresentation
        jwksPath = path
    }

    /// An identity token as Apple would sign it; every part can be spoiled for a test.
    func identityToken(
        subject: String = "apple-user-1", issuer: String = AppleIdentityVerifier.issuer, audience: String = AppleTestKeys.audience,
        expiresIn: TimeInterval = 600, nonce: String? = nil, alg: String = "RS256", kid: String = AppleTestKeys.kid, signWith other: Bool = false
    ) throws -> String {
        let now = Date().timeIntervalSince1970
        var claims: [String: Any] = ["iss": issuer, "aud": audience, "sub": subject, "iat": Int(now), "exp": Int(now + expiresIn), "email": "\(subject)@privaterelay.example"]
        if let nonce { claims["nonce"] = SHA256.hash(data: Data(nonce.utf8)).map { String(format: "%02x", $0) }.joined() }
        return try signed(claims, alg: alg, kid: kid, signWith: other)
    }

    /// `claims` as a compact JWS signed with Apple's test key (or another, or none).
    func signed(_ claims: [String: Any], alg: String = "RS256", kid: String = AppleTestKeys.kid, signWith other: Bool = false) throws -> String {
        let header = Base64URL.encode(try JSONSerialization.data(withJSONObject: ["alg": alg, "kid": kid, "typ": "JWT"]))
        let body = Base64URL.encode(try JSONSerialization.data(withJSONObject: claims))
        let input = header + "." + body
        guard alg == "RS256" else { return input + "." }
        let key = other ? try _RSA.Signing.PrivateKey(keySize: .bits2048) : try _RSA.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        let signature = try key.signature(for: SHA256.hash(data: Data(input.utf8)), padding: .insecurePKCS1v1_5)
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }
}

/// How the application under test reaches PostgreSQL.
