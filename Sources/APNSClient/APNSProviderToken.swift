import Foundation
import JWTKit

/// The provider token: an ES256 JWT `{alg, kid}` / `{iss, iat}` signed with the .p8 key,
/// reused for `lifetime`, and signed anew early only when Apple refuses the current one.
/// One signing at a time: Apple refuses a team's token updates that come too often
/// (TooManyProviderTokenUpdates), so requests that find no token wait for the same one.
actor APNSProviderToken {
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
    private var current: (token: String, signedAt: ContinuousClock.Instant)?
    private var signing: Task<String, any Error>?

    init(privateKeyPEM: String, keyID: String, teamID: String, lifetime: Duration) throws {
        key = try ES256PrivateKey(pem: privateKeyPEM)
        self.keyID = keyID
        self.teamID = teamID
        self.lifetime = lifetime
    }

    /// The token to send now.
    func token() async throws -> String {
        if let current, ContinuousClock.now - current.signedAt < lifetime { return current.token }
        return try await sign()
    }

    /// Apple refused `rejected`: the next token is a new one, unless another request has
    /// already replaced it.
    func renew(replacing rejected: String) async throws -> String {
        if let current, current.token != rejected { return current.token }
        return try await sign()
    }

    private func sign() async throws -> String {
        if let signing { return try await signing.value }
        let task = Task { [keys, key, keyID, teamID] in
            await keys.add(ecdsa: key, kid: JWKIdentifier(string: keyID))
            return try await keys.sign(Claims(iss: teamID, iat: Int(Date().timeIntervalSince1970)), kid: JWKIdentifier(string: keyID))
        }
        signing = task
        defer { signing = nil }
        let token = try await task.value
        current = (token, ContinuousClock.now)
        return token
    }
}
