public import Foundation

/// What Apple's token and revoke endpoints need to know who is calling: the team, the
/// app's client id, and the Sign in with Apple key (.p8) that signs the client secret.
public struct AppleIDCredentials: Sendable {
    public var teamID: String
    /// The app's bundle id (or Services ID): `client_id`, and the client secret's `sub`.
    public var clientID: String
    public var keyID: String
    /// The .p8 key's PEM text (PKCS#8, P-256).
    public var privateKeyPEM: String
    /// How long one client secret is used. Apple accepts at most 180 days.
    public var clientSecretLifetime: Duration = .seconds(24 * 3600)

    public init(teamID: String, clientID: String, keyID: String, privateKeyPEM: String) {
        self.teamID = teamID
        self.clientID = clientID
        self.keyID = keyID
        self.privateKeyPEM = privateKeyPEM
    }

    /// Apple's limit on a client secret's `exp - iat`.
    public static let maximumClientSecretLifetime: Duration = .seconds(180 * 24 * 3600)
}

extension AppleIDCredentials {
    /// Throws unless the key is a P-256 private key in PEM, as a .p8 file holds.
    public func validateKey() throws {
        _ = try AppleClientSecret(credentials: self)
    }
}
