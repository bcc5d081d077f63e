import Foundation

/// Holds the session and hands out access tokens, refreshing one that expired exactly once
/// however many calls find it expired at the same time: the refresh token is single use, and
/// a second refresh with the same token would end the session.
actor SessionAuthority {
    typealias Refresher = @Sendable (_ refreshToken: String) async throws -> StoredSession

    private let storage: any SessionStorage
    private let refresher: Refresher
    private var session: StoredSession?
    private var loaded = false
    private var refreshing: Task<StoredSession, any Error>?
    private var sessionEndedHandlers: [@Sendable () -> Void] = []
    /// Refresh this long before the expiry the server gave, so a call in flight does not expire.
    private let margin: TimeInterval = 30

    /// How many refreshes reached the server: one per expiry, however many calls waited on it.
    private(set) var refreshCount = 0

    init(storage: any SessionStorage, refresher: @escaping Refresher) {
        self.storage = storage
        self.refresher = refresher
    }

    func current() async throws -> StoredSession? {
        if !loaded {
            session = try await storage.loadSession()
            loaded = true
        }
        return session
    }

    func replace(with newSession: StoredSession?) async throws {
        loaded = true
        session = newSession
        try await storage.saveSession(newSession)
    }

    func onSessionEnded(_ handler: @escaping @Sendable () -> Void) {
        sessionEndedHandlers.append(handler)
    }

    /// A token that is not known to have expired: refreshed first when it is about to.
    func accessToken() async throws -> String {
        guard let session = try await current() else { throw DiaryError.notSignedIn }
        if session.accessTokenExpiresAt.timeIntervalSinceNow > margin { return session.accessToken }
        return try await refreshedToken(replacing: session.accessToken)
    }

    /// A token newer than `stale`, which the server refused as expired. Calls that saw the
    /// same stale token share one refresh; a call that comes after it gets the new token.
    func refreshedToken(replacing stale: String) async throws -> String {
        guard let session = try await current() else { throw DiaryError.notSignedIn }
        if session.accessToken != stale { return session.accessToken }
        if let refreshing {
            // A refresh the server refused ended the session for every call that waited on it.
            do { return try await refreshing.value.accessToken } catch let DiaryError.problem(problem) where problem.status == 401 {
                throw DiaryError.sessionEnded
            }
        }
        let refresher = self.refresher
        let refreshToken = session.refreshToken
        let task = Task { try await refresher(refreshToken) }
        refreshing = task
        refreshCount += 1
        do {
            let renewed = try await task.value
            try await replace(with: renewed)
            refreshing = nil
            return renewed.accessToken
        } catch let error as DiaryError {
            refreshing = nil
            if case .problem(let problem) = error, problem.status == 401 {
                try await end()
                throw DiaryError.sessionEnded
            }
            throw error
        } catch {
            refreshing = nil
            throw error
        }
    }

    /// Forgets the session and tells whoever asked: the server ended it.
    func end() async throws {
        try await replace(with: nil)
        for handler in sessionEndedHandlers { handler() }
    }
}
