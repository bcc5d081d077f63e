import PostgresClient
import Testing
import TestSupport

/// An advisory lock held by a connection of the test's own. `blockedQuery` waits for it,
/// and so holds the connection it runs on until `open()`: whatever the test does meanwhile
/// happens while that connection is busy, however slowly a loaded test run goes. Sleeps
/// (`pg_sleep`, `Task.sleep`) gave no such certainty: under load a test's own steps took
/// longer than the sleep.
struct AdvisoryGate: Sendable {
    static let blockedQuery: PostgresQuery = "select pg_backend_pid()::int8 as pid, pg_advisory_xact_lock(4242)"
    let keeper: PostgresConnection

    /// Holds the gate shut while `body` runs. Advisory locks belong to one database, so
    /// the gate connects to the test's.
    static func with<Result: Sendable>(in configuration: PostgresConfiguration, _ body: (AdvisoryGate) async throws -> Result) async throws -> Result {
        try await TestDatabase.withPool(configuration, size: 1) { gatePool in
            try await gatePool.withConnection { keeper in
                try await keeper.query("select pg_advisory_lock(4242)")
                return try await body(AdvisoryGate(keeper: keeper))
            }
        }
    }

    func waitUntilAQueryWaits() async {
        await waitUntil("a query waits at the gate") {
            let waiting = try? await keeper.query("select 1 from pg_stat_activity where datname = current_database() and wait_event = 'advisory'")
            return (waiting?.count ?? 0) > 0
        }
    }

    func open() async throws {
        try await keeper.query("select pg_advisory_unlock(4242)")
    }
}

/// TestSupport's `waitUntil` for up to 20 s, recording an issue instead of throwing, so a
/// test goes on to open its gate rather than hang on a query held there.
func waitUntil(_ what: String, _ condition: () async -> Bool) async {
    do {
        try await TestSupport.waitUntil(what, within: .seconds(20), condition)
    } catch {
        Issue.record("\(error)")
    }
}
