public import Foundation

/// What APNs token-based authentication needs, and where to send.
public struct APNSConfiguration: Sendable {
    /// The .p8 key's PEM text (PKCS#8, P-256).
    public var privateKeyPEM: String
    public var keyID: String
    public var teamID: String
    /// The app's bundle id: `apns-topic`.
    public var topic: String
    /// Replaces both of Apple's hosts (tests, proxies); nil chooses by the device's environment.
    public var endpoint: URL?
    /// An extra trusted CA (PEM file), for a stand-in's certificate.
    public var extraTrustedCAFile: String?
    /// How long one provider token is used. Apple refuses tokens older than 60 minutes, and
    /// refreshes more often than every 20.
    public var providerTokenLifetime: Duration = .seconds(40 * 60)
    /// One request's limit, connection included.
    public var requestTimeout: Duration = .seconds(10)

    public init(privateKeyPEM: String, keyID: String, teamID: String, topic: String, endpoint: URL? = nil, extraTrustedCAFile: String? = nil) {
        self.privateKeyPEM = privateKeyPEM
        self.keyID = keyID
        self.teamID = teamID
        self.topic = topic
        self.endpoint = endpoint
        self.extraTrustedCAFile = extraTrustedCAFile
    }

    public static let productionHost = URL(string: "https://api.push.apple.com")!
    public static let sandboxHost = URL(string: "https://api.sandbox.push.apple.com")!

    func base(for environment: APNSEnvironment) -> URL {
        endpoint ?? (environment == .production ? Self.productionHost : Self.sandboxHost)
    }
}

/// Which of Apple's hosts a device token belongs to.
public enum APNSEnvironment: String, Sendable, Codable, CaseIterable {
    case sandbox, production
}

extension APNSConfiguration {
    /// Throws unless the key is a P-256 private key in PEM, as a .p8 file holds.
    public func validateKey() throws {
        _ = try APNSProviderToken(privateKeyPEM: privateKeyPEM, keyID: keyID, teamID: teamID, lifetime: providerTokenLifetime)
    }
}
