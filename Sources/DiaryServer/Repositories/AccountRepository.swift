import DiaryModels
import Foundation
import PostgresClient

/// Sign-in and sessions: the queries that run before there is a caller.
struct AccountRepository: Sendable {
    let pool: PostgresPool
    let tokens: TokenService

    /// Finds or creates the user for an Apple subject and opens a session for them.
    func signInWithApple(subject: String, email: String?, displayName: String) async throws -> Session {
        let sessionID = UUID()
        return try await openSession(sessionID, creating: """
            with account as (
                insert into users (apple_sub, email, display_name) values (\(subject), \(email), \(displayName))
                on conflict (apple_sub) do update set email = coalesce(excluded.email, users.email)
                returning id
            )
            insert into sessions (id, user_id) select \(sessionID), id from account
            """)
    }

    /// Finds or creates the development user called `name`.
    func signInForDevelopment(name: String) async throws -> Session {
        let sessionID = UUID()
        return try await openSession(sessionID, creating: """
            with account as (
                insert into users (dev_name, display_name) values (\(name), \(name))
                on conflict (dev_name) do update set dev_name = excluded.dev_name
                returning id
            )
            insert into sessions (id, user_id) select \(sessionID), id from account
            """)
    }

    /// One round trip: the user and session (`creating`), the first refresh token, the profile.
    private func openSession(_ sessionID: UUID, creating sessionInsert: PostgresQuery) async throws -> Session {
        let refreshToken = tokens.newRefreshToken()
        let results = try await pool.transaction([
            sessionInsert,
            """
            insert into refresh_tokens (token_hash, session_id, expires_at)
            values (\(TokenService.hash(refreshToken)), \(sessionID), now() + make_interval(days => \(Int32(TokenService.refreshLifetimeDays))))
            """,
            "select \(UserColumns.me), now() as issued_at from users join sessions on sessions.user_id = users.id where sessions.id = \(sessionID)",
        ])
        guard let row = results[2].first else { throw Problem.internalError() }
        let me = try UserColumns.me(from: row)
        return try session(me: me, sessionID: sessionID, refreshToken: refreshToken, issuedAt: try row.decode("issued_at"))
    }

    /// Exchanges a refresh token; nil when it must be refused (401). Reuse of a spent token
    /// revokes the whole session inside the same transaction.
    func refresh(_ presented: String) async throws -> Session? {
        let successor = tokens.successor(of: presented)
        let successorHash = TokenService.hash(successor)
        let results = try await pool.transaction([
            """
            select outcome, session_id, issued_at from rotate_refresh_token(\(TokenService.hash(presented)), \(successorHash), make_interval(days => \(Int32(TokenService.refreshLifetimeDays))))
            """,
            """
            select \(UserColumns.me) from users
            where users.id = (select s.user_id from refresh_tokens t join sessions s on s.id = t.session_id
                              where t.token_hash = \(successorHash) and s.revoked_at is null)
            """,
        ])
        guard let outcome = results[0].first else { return nil }
        switch try outcome.decode("outcome", as: String.self) {
        case "rotated", "replayed":
            guard let userRow = results[1].first else { return nil }
            return try session(
                me: try UserColumns.me(from: userRow),
                sessionID: try outcome.decode("session_id"),
                refreshToken: successor,
                issuedAt: try outcome.decode("issued_at")
            )
        default:
            return nil
        }
    }

    private func session(me: Me, sessionID: UUID, refreshToken: String, issuedAt: Date) throws -> Session {
        let identity = TokenService.Identity(userID: me.id, sessionID: sessionID)
        let access = try tokens.accessToken(for: identity, issuedAt: issuedAt)
        let remaining = Int(TokenService.accessLifetime) - Int(Date().timeIntervalSince1970 - issuedAt.timeIntervalSince1970.rounded(.down))
        return Session(accessToken: access, refreshToken: refreshToken, expiresIn: max(0, remaining), user: me)
    }
}
