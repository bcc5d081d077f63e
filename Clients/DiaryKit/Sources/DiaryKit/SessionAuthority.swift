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
    /// The refresh under way, by the refresh token it spends.
    private var refreshing: (refreshToken: String, task: Task<StoredSession, any Error>)?
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

    /// A token that is not known to have expired: refreshed first when it is about to. Inside
    /// `DiaryClient.acting(as:)`, only a token of that user: another user's session throws.
    func accessToken() async throws -> String {
        let session = try await currentForCaller()
        if session.accessTokenExpiresAt.timeIntervalSinceNow > margin { return session.accessToken }
        return try await refreshedToken(replacing: session.accessToken)
    }

    /// A token newer than `stale`, which the server refused as expired. Calls that saw the
    /// same stale token share one refresh; a call that comes after it gets the new token.
    ///
    /// A sign-out or another sign-in during the refresh wins: the refresh's result is kept
    /// only while the session it refreshed is still the one held, and a refusal ends only
    /// that session. A caller whose session was replaced meanwhile gets `notSignedIn` (or
    /// `sessionChanged`), never the next user's token.
    func refreshedToken(replacing stale: String) async throws -> String {
        let session = try await currentForCaller()
        if session.accessToken != stale { return session.accessToken }
        let task: Task<StoredSession, any Error>
        if let refreshing, refreshing.refreshToken == session.refreshToken {
            task = refreshing.task
        } else {
            let refresher = self.refresher
            let refreshToken = session.refreshToken
            task = Task { try await refresher(refreshToken) }
            refreshing = (refreshToken, task)
            refreshCount += 1
        }
        let result = await task.result
        if refreshing?.task == task { refreshing = nil }
        let stillHeld = self.session?.refreshToken == session.refreshToken
        switch result {
        case .success(let renewed):
            if stillHeld { try await replace(with: renewed) }
            // The caller who saved it, those who shared the refresh, or a session that replaced it.
            guard let held = self.session else { throw DiaryError.notSignedIn }
            guard held.refreshToken == renewed.refreshToken else { throw DiaryError.sessionChanged }
            return renewed.accessToken
        case .failure(DiaryError.problem(let problem)) where problem.status == 401:
            // The server refused the refresh token: that session is over, and only that one.
            if stillHeld { try await end() }
            throw DiaryError.sessionEnded
        case .failure(let error):
            throw error
        }
    }

    /// The session held, checked against the user the calling task acts for, if any.
    private func currentForCaller() async throws -> StoredSession {
        guard let session = try await current() else { throw DiaryError.notSignedIn }
        if let expected = SessionAuthority.actingUserID, expected != session.userID { throw DiaryError.sessionChanged }
        return session
    }

    /// The user a task's calls must be made as (`DiaryClient.acting(as:)`): the offline queue
    /// sends a user's drafts only with that user's token.
    @TaskLocal static var actingUserID: String?

    /// Forgets the session whose access token the server refused, if it is still the one
    /// held (a sign-in since then is not the session the server ended).
    func end(refused accessToken: String) async throws {
        guard session?.accessToken == accessToken else { throw DiaryError.sessionChanged }
        try await end()
    }

    /// Forgets the session and tells whoever asked: the server ended it.
    func end() async throws {
        try await replace(with: nil)
        for handler in sessionEndedHandlers { handler() }
    }
}
