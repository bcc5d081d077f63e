package import PostgresClient

/// Applies Apple's notifications. There is no caller: `apply_apple_notification` finds the
/// account by its Apple subject, and records the `jti` in the same transaction, so that a
/// repeat is not applied twice.
package struct AppleNotificationRepository: Sendable {
    let pool: PostgresPool

    package init(pool: PostgresPool) {
        self.pool = pool
    }

    /// What the notification did: duplicate, unknown_user, sessions_revoked,
    /// account_deleted, email_updated or ignored.
    package func apply(_ notification: AppleNotification) async throws -> String {
        // A deleted account leaves its diaries: the realtime feed is told once it commits.
        let rows = try await AppSQLState.translating {
            try await pool.transaction([
                """
                select apply_apple_notification(\(notification.id), \(notification.type), \(notification.subject), \(notification.email)) as outcome
                """,
            ], afterCommit: [Announcement.pending])[0]
        }
        guard let outcome = try rows.first?.decode("outcome", as: String.self) else {
            throw DomainError.inconsistent("apply_apple_notification returned no row")
        }
        return outcome
    }
}
