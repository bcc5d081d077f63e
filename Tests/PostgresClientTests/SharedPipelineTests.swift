import Foundation
@testable import PostgresClient
import Testing
import TestSupport

/// `PostgresPool.Placement.sharedConnection`: `query` and `transaction` pipelines that queue
/// behind others on a few busy connections.
@Suite("Pipelines sharing a connection", .timeLimit(.minutes(1)))
struct SharedPipelineTests {
    @Test("once the only connection is busy, pipelines queue on it instead of waiting for it")
    func pipelinesQueueOnABusyConnection() async throws {
        try await TestDatabase.with { configuration in
            // Waiting for the connection would take longer than the acquisition timeout.
            try await TestDatabase.withPool(configuration, size: 1, acquireTimeout: .milliseconds(150)) { pool in
                try await AdvisoryGate.with(in: configuration) { gate in
                    try await withThrowingTaskGroup(of: Int.self) { group in
                        group.addTask { try await pool.query(AdvisoryGate.blockedQuery, placement: .sharedConnection); return -1 }
                        await gate.waitUntilAQueryWaits()
                        for n in 0..<5 {
                            group.addTask { try await pool.query("select \(n)::int8 * 10 as value", placement: .sharedConnection).first!.decode("value", as: Int.self) }
                        }
                        await waitUntil("five pipelines queue behind the blocked one") { pool.statistics.sharedPipelines == 6 }
                        try await gate.open()
                        let values = try await group.reduce(into: []) { $0.append($1) }
                        #expect(values.sorted() == [-1, 0, 10, 20, 30, 40])
                    }
                }
                #expect(pool.statistics.idle == 1)
                #expect(pool.statistics.inUse == 0)
            }
        }
    }

    @Test("pipelines that are the first on a new connection at the same moment all get their answers")
    func firstPipelinesOnANewConnection() async throws {
        try await TestDatabase.with { configuration in
            for _ in 0..<5 {
                try await TestDatabase.withPool(configuration, size: 1) { pool in
                    let values = try await withThrowingTaskGroup(of: Int.self) { group in
                        for n in 0..<32 {
                            group.addTask { try await pool.query("select \(n)::int8 as value", placement: .sharedConnection).first!.decode("value", as: Int.self) }
                        }
                        return try await group.reduce(into: []) { $0.append($1) }
                    }
                    #expect(values.sorted() == Array(0..<32))
                }
            }
        }
    }

    @Test("shared pipelines queue on the shared connections only, and a pipeline of its own never waits behind them")
    func placementDecidesTheConnection() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 2, sharedConnections: 1) { pool in
                func backend(_ rows: PostgresRows) throws -> Int { try rows.first!.decode("pid", as: Int.self) }
                try await AdvisoryGate.with(in: configuration) { gate in
                    async let blocked = pool.query(AdvisoryGate.blockedQuery, placement: .sharedConnection)
                    await gate.waitUntilAQueryWaits()
                    async let queued = pool.query("select pg_backend_pid()::int8 as pid", placement: .sharedConnection)
                    await waitUntil("a second shared pipeline has its place") { pool.statistics.sharedPipelines == 2 }
                    // Answered while the shared connection is still held at the gate.
                    let own = try await pool.query("select pg_backend_pid()::int8 as pid")
                    try await gate.open()
                    let (blockedPID, queuedPID, ownPID) = try await (backend(blocked), backend(queued), backend(own))
                    #expect(queuedPID == blockedPID)
                    #expect(ownPID != blockedPID)
                }
            }
        }
    }

    @Test("a failed shared transaction rolls back only its own statements, and the pipelines behind it succeed")
    func failureStaysInItsPipeline() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                try await pool.query("create table notes (body text not null check (body <> ''))")
                try await queueBehindABlockedQuery(on: pool, in: configuration, [
                    {
                        let error = await #expect(throws: PostgresError.self) {
                            try await pool.transaction(["insert into notes values (\("lost"))", "insert into notes values (\(""))"], placement: .sharedConnection)
                        }
                        #expect(error?.kind == .checkViolation)
                    },
                    { _ = try await pool.transaction(["insert into notes values (\("kept"))"], placement: .sharedConnection) },
                    { try await pool.query("insert into notes values (\("also kept"))", placement: .sharedConnection) },
                ])
                let bodies = try await pool.query("select body from notes order by body").map { try $0.decode("body", as: String.self) }
                #expect(bodies == ["also kept", "kept"])
            }
        }
    }

    @Test("a statement that opens a transaction never shares, so nothing queued behind it is caught in it")
    func transactionControlTakesItsOwnConnection() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                try await pool.query("create table notes (body text not null)")
                try await queueBehindABlockedQuery(on: pool, in: configuration, [
                    // Left open on purpose: the pool must drop that connection, not lend it on.
                    { try await pool.query("  /* misuse */ BEGIN", placement: .sharedConnection) },
                    { _ = try await pool.transaction(["insert into notes values (\("committed"))"], placement: .sharedConnection) },
                ])
                // Seen from another pool, so only what was committed counts.
                let bodies = try await TestDatabase.withPool(configuration, size: 1) { other in
                    try await other.query("select body from notes").map { try $0.decode("body", as: String.self) }
                }
                #expect(bodies == ["committed"])
            }
        }
    }

    @Test("the first word decides whether a statement controls the transaction", arguments: [
        ("begin", true), ("  START TRANSACTION", true), ("-- note\ncommit", true), ("/* a */ rollback", true),
        ("end", true), ("savepoint a", true), ("release a", true), ("prepare transaction 'x'", true), ("abort", true),
        ("select 1", false), ("with begin as (select 1) select * from begin", false), ("insert into t values ('begin')", false),
        ("(select 1)", false), ("beginning", false), ("-- only a comment", false), ("/* unclosed", true), ("\tCoMmIt", true), ("", false),
    ])
    func recognisesTransactionControl(sql: String, controls: Bool) {
        #expect(PostgresQuery(unsafeSQL: sql).controlsTransaction == controls)
    }

    @Test("a connection lost under queued pipelines fails them all, and the next query reconnects")
    func lostConnectionFailsEveryQueuedPipeline() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                let failures = try await AdvisoryGate.with(in: configuration) { gate in
                    try await withThrowingTaskGroup(of: PostgresError.Kind?.self) { group in
                        @Sendable func failure(of query: PostgresQuery) async throws -> PostgresError.Kind? {
                            do { try await pool.query(query, placement: .sharedConnection) } catch let error as PostgresError { return error.kind }
                            return nil
                        }
                        group.addTask { try await failure(of: AdvisoryGate.blockedQuery) }
                        await gate.waitUntilAQueryWaits()
                        for _ in 0..<3 { group.addTask { try await failure(of: "select 1") } }
                        await waitUntil("three pipelines queue behind the blocked one") { pool.statistics.sharedPipelines == 4 }
                        // From the gate's own connection, which the filter leaves alive.
                        let rows = try await gate.keeper.query("""
                            select pg_terminate_backend(pid) from pg_stat_activity
                            where datname = current_database() and pid <> pg_backend_pid()
                            """)
                        #expect(rows.count == 1)
                        return try await group.reduce(into: []) { $0.append($1) }
                    }
                }
                #expect(failures.count == 4)
                #expect(failures.allSatisfy { $0 == .connectionFailure })
                let rowCount = try await pool.query("select 1").count
                #expect(rowCount == 1)
            }
        }
    }

    /// Runs `steps` as tasks, one after another, behind a shared query held at a gate on the
    /// pool's only connection, and opens the gate once each has its place: queued on that
    /// connection, or waiting for one of its own.
    private func queueBehindABlockedQuery(
        on pool: PostgresPool, in configuration: PostgresConfiguration, _ steps: [@Sendable () async throws -> Void]
    ) async throws {
        try await AdvisoryGate.with(in: configuration) { gate in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await pool.query(AdvisoryGate.blockedQuery, placement: .sharedConnection) }
                await gate.waitUntilAQueryWaits()
                for (index, step) in steps.enumerated() {
                    group.addTask(operation: step)
                    await waitUntil("step \(index + 1) has its place") {
                        let statistics = pool.statistics
                        return statistics.sharedPipelines + statistics.waiting == index + 2
                    }
                }
                try await gate.open()
                try await group.waitForAll()
            }
        }
    }
}
