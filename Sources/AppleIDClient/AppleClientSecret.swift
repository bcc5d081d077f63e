import Foundation
import JWTKit

/// The client secret Apple's REST API asks for: an ES256 JWT, header `{alg, kid}`, claims
/// `{iss: team, sub: client id, aud: https://appleid.apple.com, iat, exp}`, signed with the
/// Sign in with Apple key. One per client id (an app may have several bundle ids) is reused
/// until an hour (or a tenth of its lifetime) before it expires; requests that find none
/// wait for the same signing.
actor AppleClientSecret {
    struct Claims: JWTPayload {
        var iss: String
        var sub: String
        var aud: String
        var iat: Int
        var exp: Int

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    static let audience = "https://appleid.apple.com"

    private let keys = JWTKeyCollection()
    private let key: ES256PrivateKey
    private let credentials: AppleIDCredentials
    private let lifetime: Int
    private var current: [String: (secret: String, renewAt: Int)] = [:]
    private var signing: [String: Task<(String, Int), any Error>] = [:]

    init(credentials: AppleIDCredentials) throws {
        key = try ES256PrivateKey(pem: credentials.privateKeyPEM)
        self.credentials = credentials
        let seconds = min(credentials.clientSecretLifetime, AppleIDCredentials.maximumClientSecretLifetime).components.seconds
        lifetime = Int(max(seconds, 60))
    }

    /// The secret to send now as `clientID`.
    func secret(for clientID: String, now: Date = Date()) async throws -> String {
        let moment = Int(now.timeIntervalSince1970)
        if let current = current[clientID], moment < current.renewAt { return current.secret }
        if let signing = signing[clientID] { return try await signing.value.0 }
        let task = Task { [keys, key, credentials, lifetime] in
            let kid = JWKIdentifier(string: credentials.keyID)
            await keys.add(ecdsa: key, kid: kid)
            let claims = Claims(iss: credentials.teamID, sub: clientID, aud: Self.audience, iat: moment, exp: moment + lifetime)
            let secret = try await keys.sign(claims, kid: kid)
            return (secret, moment + lifetime - min(3600, lifetime / 10))
        }
        signing[clientID] = task
        defer { signing[clientID] = nil }
        let (secret, renewAt) = try await task.value
        current[clientID] = (secret, renewAt)
        return secret
    }
}
