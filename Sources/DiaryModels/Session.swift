import Foundation

/// What sign-in and refresh return.
public struct Session: Codable, Sendable, Equatable {
    public var accessToken: String
    public var refreshToken: String
    public var tokenType: String
    /// Seconds until the access token expires.
    public var expiresIn: Int
    public var user: Me

    public init(accessToken: String, refreshToken: String, expiresIn: Int, user: Me) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.tokenType = "Bearer"
        self.expiresIn = expiresIn
        self.user = user
    }
}

public struct AppleSignInRequest: Codable, Sendable {
    public var identityToken: String
    public var nonce: String?
    public var displayName: String?
    /// The one-time code that came with the identity token; exchanged for Apple's refresh
    /// token, which is kept to revoke it when the account is deleted.
    public var authorizationCode: String?

    public init(identityToken: String, nonce: String? = nil, displayName: String? = nil, authorizationCode: String? = nil) {
        self.identityToken = identityToken
        self.nonce = nonce
        self.displayName = displayName
        self.authorizationCode = authorizationCode
    }
}

public struct DevSignInRequest: Codable, Sendable {
    public var name: String
    public init(name: String) { self.name = name }
}

public struct RefreshRequest: Codable, Sendable {
    public var refreshToken: String
    public init(refreshToken: String) { self.refreshToken = refreshToken }
}
