package import DiaryModels
import Foundation
package import PostgresClient

/// Sign-in and sessions: the queries that run before there is a caller.
package struct AccountRepository: Sendable {
    let pool: PostgresPool
    let tokens: TokenService
    /// Mints the profile photo URL of the `Me` that sign-in and refresh answer.
    let photoLinks: PhotoLinks

    package init(pool: PostgresPool, tokens: TokenService, photoLinks: PhotoLinks) {
        self.photoLinks = photoLinks
        self.pool = pool
        self.tokens = tokens
    }

    /// Finds or creates the user for an Apple subject and opens a session for them, keeping
    /// `appleToken` (replacing an earlier one) in the same transaction.
    package func signInWithApple(subject: String, email: String?, displayName: String, appleToken: SealedAppleToken? = nil) async throws -> Session {
        try await openSession(appleSubject: subject, devAccount: nil, email: email, displayName: displayName, appleToken: appleToken)
    }

    package func signInForDevelopment(name: String) async throws -> Session {
        try await openSession(appleSubject: nil, devAccount: name, email: nil, displayName: name)
    }

    /// `open_session` finds or makes the account, opens the session with its first refresh
    /// token, and makes the account this transaction's caller, so the row can be read back.
    private func openSession(appleSubject: String?, devAccount: String?, email: String?, displayName: String, appleToken: SealedAppleToken? = nil) async throws -> Session {
        let sessionID = UUID()
        let refreshToken = tokens.newRefreshToken()
        var statements: [PostgresQuery] = [
            """
            select open_session(\(appleSubject), \(devAccount), \(email), \(displayName), \(sessionID),
                \(TokenService.hash(refreshToken)), make_interval(days => \(Int32(TokenService.refreshLifetimeDays))))
            """,
        ]
        if let appleToken {
            statements.append("select store_apple_token(\(appleToken.sealed.tokenID), \(appleToken.clientID), \(appleToken.sealed.bytes))")
        }
        statements.append("select \(UserColumns.me), now() as issued_at from users where \(UserRepository.callersRow)")
        let results = try await AppSQLState.translating { try await pool.transaction(statements) }
        guard let row = results.last?.first else { throw DomainError.inconsistent("the signed-in account cannot be read back") }
        let me = try UserColumns.me(from: row, links: photoLinks)
        return try await session(me: me, sessionID: sessionID, refreshToken: refreshToken, issuedAt: try row.decode("issued_at"))
    }

    package func refresh(_ presented: String) async throws -> Session? {
        let successor = tokens.successor(of: presented)
        let successorHash = TokenService.hash(successor)
        let results = try await AppSQLState.translating { try await pool.transaction([
            """
            select outcome, session_id, issued_at from rotate_refresh_token(\(TokenService.hash(presented)), \(successorHash), make_interval(days => \(Int32(TokenService.refreshLifetimeDays))))
            """,
            // A successful exchange made the session's user the caller; otherwise there is none.
            UserRepository.callersAccount,
        ], afterCommit: [Announcement.pending]) }
        guard let outcome = results[0].first else { return nil }
        switch try outcome.decode("outcome", as: String.self) {
        case "rotated", "replayed":
            guard let userRow = results[1].first else { return nil }
            return try await session(
                me: try UserColumns.me(from: userRow, links: photoLinks),
                sessionID: try outcome.decode("session_id"),
                refreshToken: successor,
                issuedAt: try outcome.decode("issued_at")
            )
        default:
            return nil
        }
    }

    private func session(me: Me, sessionID: UUID, refreshToken: String, issuedAt: Date) async throws -> Session {
        let identity = TokenService.Identity(userID: me.id, sessionID: sessionID)
        let access = try await tokens.accessToken(for: identity, issuedAt: issuedAt)
        let remaining = Int(TokenService.accessLifetime.wholeSeconds) - Int(Date().timeIntervalSince1970 - issuedAt.timeIntervalSince1970.rounded(.down))
        return Session(accessToken: access, refreshToken: refreshToken, expiresIn: max(0, remaining), user: me)
    }
}
