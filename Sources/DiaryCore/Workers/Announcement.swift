package import PostgresClient

/// A channel a background worker LISTENs on, and that a write announces once it has
/// committed, so that the worker reads what changed within a round trip of the commit.
///
/// Writes announce after their COMMIT, in the same round trip, never inside the
/// transaction: PostgreSQL serialises every commit that notifies behind one lock, held
/// through the commit's WAL flush, which halved POST entry's throughput. What a write does
/// not announce (an operator's psql, a server that died after its COMMIT) the worker's
/// poll finds.
package enum Announcement: String, Sendable, CaseIterable {
    /// The change log has rows: `ChangeFeed` reads its tail.
    case diaryChanges = "diary_changes"
    /// The push outbox has rows: `PushDelivery` claims them.
    case pushOutbox = "push_outbox"

    package var channel: String { rawValue }

    /// The statement that announces it.
    package var statement: PostgresQuery { "select pg_notify(\(channel), '')" }
}
