public import Foundation

/// The tokens of a signed-in user, as DiaryKit keeps them between launches.
public struct StoredSession: Codable, Sendable, Hashable {
    /// The bearer token sent with every call.
    public var accessToken: String
    /// The single-use token that buys the next pair.
    public var refreshToken: String
    /// When the access token stops working; DiaryKit refreshes a little before.
    public var accessTokenExpiresAt: Date
    /// The signed-in user's id.
    public var userID: String

    /// Creates a stored session.
    public init(accessToken: String, refreshToken: String, accessTokenExpiresAt: Date, userID: String) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.accessTokenExpiresAt = accessTokenExpiresAt
        self.userID = userID
    }
}

/// Where the app keeps the session: the Keychain in an app, memory in tests. DiaryKit saves
/// every rotated pair at once, since a refresh token is single use: losing the new pair
/// after a refresh means signing in again.
public protocol SessionStorage: Sendable {
    /// The session saved last, if any.
    func loadSession() async throws -> StoredSession?
    /// Saves `session`, or forgets the saved one when it is nil.
    func saveSession(_ session: StoredSession?) async throws
}

/// A `SessionStorage` in memory: sessions last as long as the process.
public actor InMemorySessionStorage: SessionStorage {
    private var session: StoredSession?

    /// Creates an empty storage, or one holding `session`.
    public init(session: StoredSession? = nil) {
        self.session = session
    }

    /// The session saved last, if any.
    public func loadSession() -> StoredSession? { session }

    /// Keeps `session`.
    public func saveSession(_ session: StoredSession?) { self.session = session }
}
