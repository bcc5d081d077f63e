package import Foundation
package import PostgresClient

/// Recomputes the maintained counters (migration 0007) from the rows they count, reports
/// every difference and, if asked, repairs it.
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

    /// Every counter that differs from a count from scratch.
    package func differences() async throws -> [Difference] {
        try await pool.query("\(Self.differences) order by 1, 2, 3").map(Self.difference(from:))
    }

    /// Sets every differing counter right and returns what it changed.
    package func repair() async throws -> [Difference] {
        let results = try await pool.transaction([
            """
            with fix as (\(Self.unreadDifferences))
            update diary_members m set unread_count = m.unread_count + (fix.actual - fix.stored)
            from fix where m.diary_id = fix.diary_id and m.user_id = fix.user_id
            returning 'unread_count' as counter, fix.diary_id, fix.user_id, fix.stored, fix.actual
            """,
            """
            with fix as (\(Self.entryCountDifferences))
            update diaries d set entry_count = d.entry_count + (fix.actual - fix.stored)
            from fix where d.id = fix.diary_id
            returning 'entry_count' as counter, fix.diary_id, fix.user_id, fix.stored, fix.actual
            """,
        ])
        return try results.joined().map(Self.difference(from:))
    }

    private static let unreadDifferences: PostgresFragment = """
        select m.diary_id, m.user_id, m.unread_count as stored, actual.count as actual
        from diary_members m
        cross join lateral (
            select count(*)::integer as count from entries e
            where e.diary_id = m.diary_id and e.user_id <> m.user_id
              and not exists (select 1 from entry_reads r where r.diary_id = e.diary_id and r.entry_id = e.id and r.user_id = m.user_id)
        ) actual
        where m.unread_count <> actual.count
        """

    private static let entryCountDifferences: PostgresFragment = """
        select d.id as diary_id, null::uuid as user_id, d.entry_count as stored, actual.count as actual
        from diaries d
        cross join lateral (select count(*)::integer as count from entries e where e.diary_id = d.id) actual
        where d.entry_count <> actual.count
        """

    private static let differences: PostgresQuery = """
        select 'unread_count' as counter, * from (\(unreadDifferences)) unread
        union all
        select 'entry_count' as counter, * from (\(entryCountDifferences)) entry_counts
        """

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
