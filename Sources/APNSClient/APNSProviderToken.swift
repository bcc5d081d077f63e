import Foundation
import JWTKit
import NIOConcurrencyHelpers

/// The provider token: an ES256 JWT `{alg, kid}` / `{iss, iat}` signed with the .p8 key,
/// reused for `lifetime`, and signed anew early only when Apple refuses the current one.
final class APNSProviderToken: Sendable {
    struct Claims: JWTPayload {
        var iss: String
        var iat: Int

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    private let keys = JWTKeyCollection()
    private let key: ES256PrivateKey
    private let keyID: String
    private let teamID: String
    private let lifetime: Duration
    private let current = NIOLockedValueBox<(token: String, signedAt: ContinuousClock.Instant)?>(nil)

    init(privateKeyPEM: String, keyID: String, teamID: String, lifetime: Duration) throws {
        key = try ES256PrivateKey(pem: privateKeyPEM)
        self.keyID = keyID
        self.teamID = teamID
        self.lifetime = lifetime
    }

    /// The token to send now.
    func token() async throws -> String {
        if let current = current.withLockedValue({ $0 }), ContinuousClock.now - current.signedAt < lifetime {
            return current.token
        }
        return try await sign()
    }

    /// Apple refused `rejected`: the next token is a new one, unless another request has
    /// already replaced it.
    func renew(replacing rejected: String) async throws -> String {
        if let current = current.withLockedValue({ $0 }), current.token != rejected { return current.token }
        return try await sign()
    }

    private func sign() async throws -> String {
        await keys.add(ecdsa: key, kid: JWKIdentifier(string: keyID))
        let token = try await keys.sign(
            Claims(iss: teamID, iat: Int(Date().timeIntervalSince1970)), kid: JWKIdentifier(string: keyID))
        current.withLockedValue { $0 = (token, ContinuousClock.now) }
        return token
    }
}
