package import Foundation
package import PostgresClient

/// Recomputes the maintained counters (migration 0007) from the rows they count, reports
/// every difference and, if asked, repairs it. The counts from scratch are the view
/// `counter_differences`, the one definition of what each counter should hold.
///
/// Runs as the schema's owner, beneath the row-level policies: it must see every diary.
/// Each query reads stored and recomputed values in one snapshot, and the data and its
/// counters change in the same transactions, so a server writing meanwhile causes no false
/// difference. A repair adds the difference to the counter rather than overwriting it, so
/// a post or a read that commits while it runs keeps its own +1 or -1.
package struct CounterReconciliation: Sendable {
    package struct Difference: Sendable, Hashable, CustomStringConvertible {
        package enum Counter: String, Sendable {
            /// diary_members.unread_count: entries by others without the member's read receipt.
            case unreadCount = "unread_count"
            /// diaries.entry_count: the diary's entries.
            case entryCount = "entry_count"
        }

        package var counter: Counter
        package var diaryID: UUID
        /// The member, for an unread count.
        package var userID: UUID?
        package var stored: Int
        package var actual: Int

        package var description: String {
            let whose = userID.map { "diary \(diaryID) member \($0)" } ?? "diary \(diaryID)"
            return "\(counter.rawValue) of \(whose): stored \(stored), actual \(actual)"
        }
    }

    let pool: PostgresPool

    /// `pool` must log in as the schema's owner (MIGRATION_DATABASE_URL).
    package init(pool: PostgresPool) {
        self.pool = pool
    }

    /// Every counter that differs from a count from scratch (the view `counter_differences`).
    package func differences() async throws -> [Difference] {
        try await pool.query("select * from counter_differences order by 1, 2, 3").map(Self.difference(from:))
    }

    /// Sets every differing counter right and returns what it changed. The same statements
    /// set the existing rows' counts when migration 0007 added the counters.
    package func repair() async throws -> [Difference] {
        let results = try await pool.transaction([
            """
            update diary_members m set unread_count = m.unread_count + (fix.actual - fix.stored)
            from counter_differences fix
            where fix.counter = 'unread_count' and m.diary_id = fix.diary_id and m.user_id = fix.user_id
            returning fix.*
            """,
            """
            update diaries d set entry_count = d.entry_count + (fix.actual - fix.stored)
            from counter_differences fix
            where fix.counter = 'entry_count' and d.id = fix.diary_id
            returning fix.*
            """,
        ])
        return try results.joined().map(Self.difference(from:))
    }

    private static func difference(from row: PostgresRow) throws -> Difference {
        guard let counter = Difference.Counter(rawValue: try row.decode("counter")) else {
            throw PostgresDecodingError(column: "counter", targetType: "Counter", failure: .malformed("unknown counter"))
        }
        return Difference(
            counter: counter, diaryID: try row.decode("diary_id"), userID: try row.decode("user_id"),
            stored: try row.decode("stored"), actual: try row.decode("actual")
        )
    }
}
