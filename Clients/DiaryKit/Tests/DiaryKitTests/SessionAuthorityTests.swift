@testable import DiaryKit
import Foundation
import Testing

/// The session held is the one the user last chose: a refresh that finishes after a sign-out
/// or a new sign-in never writes over it, nor ends it. No server: the refresher is held open
/// until the test has changed the session.
@Suite("Session authority")
struct SessionAuthorityTests {
    static func session(_ user: String, expiresIn: TimeInterval = 3600) -> StoredSession {
        StoredSession(accessToken: "access-\(user)-\(UUID())", refreshToken: "refresh-\(user)-\(UUID())",
                      accessTokenExpiresAt: Date().addingTimeInterval(expiresIn), userID: user)
    }

    /// A refresher that answers only when the test says, and says when it was called.
    final class HeldRefresher: Sendable {
        let calls: AsyncStream<String>
        private let callsContinuation: AsyncStream<String>.Continuation
        private let answers: AsyncStream<Result<StoredSession, any Error>>
        private let answersContinuation: AsyncStream<Result<StoredSession, any Error>>.Continuation

        init() {
            (calls, callsContinuation) = AsyncStream.makeStream()
            (answers, answersContinuation) = AsyncStream.makeStream()
        }

        func refresh(_ refreshToken: String) async throws -> StoredSession {
            callsContinuation.yield(refreshToken)
            for await answer in answers { return try answer.get() }
            throw CancellationError()
        }

        func answer(_ result: Result<StoredSession, any Error>) { answersContinuation.yield(result) }
    }

    /// Aiko's session, expired, and a call whose refresh has reached the refresher and waits there.
    static func refreshUnderWay() async -> (InMemorySessionStorage, HeldRefresher, SessionAuthority, Task<String, any Error>) {
        let storage = InMemorySessionStorage(session: session("aiko", expiresIn: 0))
        let refresher = HeldRefresher()
        let authority = SessionAuthority(storage: storage, refresher: refresher.refresh)
        let call = Task { try await authority.accessToken() }
        var calls = refresher.calls.makeAsyncIterator()
        _ = await calls.next()
        return (storage, refresher, authority, call)
    }

    @Test("a refresh that finishes after another sign-in keeps the new user's session, and its caller is told")
    func refreshLosesToSignIn() async throws {
        let (storage, refresher, authority, call) = await Self.refreshUnderWay()
        let kenji = Self.session("kenji")
        try await authority.replace(with: kenji)
        refresher.answer(.success(Self.session("aiko")))
        await #expect(throws: DiaryError.self) { try await call.value }
        #expect(try await authority.current() == kenji)
        #expect(await storage.loadSession() == kenji)
    }

    @Test("a refresh that finishes after a sign-out saves nothing")
    func refreshLosesToSignOut() async throws {
        let (storage, refresher, authority, call) = await Self.refreshUnderWay()
        try await authority.replace(with: nil)
        refresher.answer(.success(Self.session("aiko")))
        await #expect(throws: DiaryError.self) { try await call.value }
        #expect(try await authority.current() == nil)
        #expect(await storage.loadSession() == nil)
    }

    @Test("a refused refresh of the old session does not forget the new one, nor report it ended")
    func refusedRefreshSparesNewSession() async throws {
        let (storage, refresher, authority, call) = await Self.refreshUnderWay()
        let ended = EndedCounter()
        await authority.onSessionEnded { ended.count() }
        let kenji = Self.session("kenji")
        try await authority.replace(with: kenji)
        let refused = Problem(status: 401, code: .unauthorized, title: "Unauthorized", detail: "refresh token reused")
        refresher.answer(.failure(DiaryError.problem(refused)))
        await #expect(throws: DiaryError.self) { try await call.value }
        #expect(try await authority.current() == kenji)
        #expect(await storage.loadSession() == kenji)
        #expect(ended.value == 0)
    }

    @Test("a call made for one user never gets another user's token")
    func actingUserIsChecked() async throws {
        let authority = SessionAuthority(storage: InMemorySessionStorage(session: Self.session("kenji")),
                                         refresher: { _ in throw CancellationError() })
        await #expect(throws: DiaryError.self) {
            try await SessionAuthority.$actingUserID.withValue("aiko") { try await authority.accessToken() }
        }
        let token = try await SessionAuthority.$actingUserID.withValue("kenji") { try await authority.accessToken() }
        #expect(token.hasPrefix("access-kenji"))
    }

    final class EndedCounter: @unchecked Sendable {
        private let lock = NSLock()
        private var ends = 0
        func count() { lock.withLock { ends += 1 } }
        var value: Int { lock.withLock { ends } }
    }
}
