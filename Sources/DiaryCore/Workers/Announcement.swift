package import PostgresClient

/// A channel a background worker LISTENs on, and that a write announces once it has
/// committed, so that the worker reads what changed within a round trip of the commit.
///
/// The SQL that logs a change or queues a notification names the channel with
/// `announce()`; the server's statement after the COMMIT, in the same round trip,
/// `announce_pending()`, sends those NOTIFYs (sql/definitions/50_realtime.sql). Never inside the
/// transaction: PostgreSQL serialises every commit that notifies behind one lock, held
/// through the commit's WAL flush. A write that changed nothing wakes no worker. What
/// nobody announces (an operator's psql, a server that died after its COMMIT) the worker's
/// poll finds.
package enum Announcement: String, Sendable, CaseIterable {
    /// The change log has rows: `ChangeFeed` reads its tail.
    case diaryChanges = "diary_changes"
    /// The push outbox has rows: `PushDelivery` claims them.
    case pushOutbox = "push_outbox"
    /// Sessions ended, each named `<session> ended`: `ChangeFeed` closes their sockets.
    case sessionsEnded = "sessions_ended"

    package var channel: String { rawValue }

    /// Sends what the transaction just committed announced: the statement after a write's COMMIT.
    package static let pending: PostgresQuery = "select announce_pending()"
}
