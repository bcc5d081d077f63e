import Foundation
import NIOConcurrencyHelpers
import PostgresClient
import Testing
import TestSupport

@Suite("Transactions, the pool, recovery and notifications")
struct TransactionAndPoolTests {
    struct Boom: Error {}

    actor Flag {
        private(set) var value = false
        func set() { value = true }
    }

    @Test("withTransaction rolls back when its closure throws, and commits when it returns")
    func rollbackOnThrow() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                try await pool.query("create table notes (body text not null)")
                await #expect(throws: Boom.self) {
                    try await pool.withTransaction { connection in
                        try await connection.query("insert into notes values (\("lost"))")
                        throw Boom()
                    }
                }
                _ = try await pool.withTransaction { connection in
                    try await connection.query("insert into notes values (\("kept"))")
                }
                let rows = try await pool.query("select body from notes")
                #expect(try rows.map { try $0.decode("body", as: String.self) } == ["kept"])
            }
        }
    }

    @Test("a pipelined transaction is all or nothing, in one round trip")
    func pipelinedTransaction() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                try await pool.query("create table notes (body text not null check (body <> ''))")
                let error = await #expect(throws: PostgresError.self) {
                    try await pool.transaction([
                        "insert into notes values (\("first"))",
                        "insert into notes values (\(""))",
                        "insert into notes values (\("third"))",
                    ])
                }
                #expect(error?.kind == .checkViolation)
                let rowCount = try await pool.query("select * from notes").count
                #expect(rowCount == 0)

                let results = try await pool.transaction([
                    "select set_config('app.user_id', \("u1"), true)",
                    "insert into notes values (current_setting('app.user_id')) returning body",
                ])
                #expect(try results[1].first?.decode("body", as: String.self) == "u1")
                // Transaction-local: nothing leaks into the connection's next use.
                let leaked = try #require(try await pool.query("select coalesce(current_setting('app.user_id', true), '') as v").first)
                #expect(try leaked.decode("v", as: String.self) == "")
            }
        }
    }

    @Test("a full pool answers poolExhausted after the acquisition timeout, while the holder still holds its connection")
    func poolTimeout() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 1, acquireTimeout: .milliseconds(200)) { pool in
                try await AdvisoryGate.with(in: configuration) { gate in
                    // The holder keeps the pool's one connection until the gate opens, so the
                    // refusal below cannot have waited for it, however slowly a loaded run goes.
                    async let holder = pool.query(AdvisoryGate.blockedQuery)
                    await gate.waitUntilAQueryWaits()
                    let error = await #expect(throws: PostgresError.self) { try await pool.query("select 1") }
                    #expect(error?.kind == .poolExhausted)
                    #expect(pool.statistics.inUse == 1, "the holder still has its connection")
                    try await gate.open()
                    _ = try await holder
                }
                let rowCount = try await pool.query("select 1").count
                #expect(rowCount == 1)
                #expect(pool.statistics.inUse == 0 && pool.statistics.idle == 1 && pool.statistics.waiting == 0)
            }
        }
    }

    @Test("each waiter times out at its own deadline, never earlier, and one served in time is not failed")
    func waitersExpireAtTheirOwnDeadlines() async throws {
        try await TestDatabase.with { configuration in
            // The timeout is long enough that the third waiter, served once the gate opens, is
            // served within it on a loaded machine too, where passing the connection on is slow.
            try await TestDatabase.withPool(configuration, size: 1, acquireTimeout: .seconds(10)) { pool in
                try await AdvisoryGate.with(in: configuration) { gate in
                    // The holder has the only connection before the clock starts, and keeps it
                    // until the gate opens: a loaded test run cannot move its end.
                    async let holder = pool.query(AdvisoryGate.blockedQuery)
                    await gate.waitUntilAQueryWaits()
                    let clock = ContinuousClock()
                    let started = clock.now
                    // How long after `started` a waiter that set out at `offset` gave up, or nil if it was served.
                    @Sendable func waiter(setsOutAt offset: Duration) async throws -> Duration? {
                        try await pace(until: started + offset)
                        do {
                            try await pool.query("select 1")
                            return nil
                        } catch let error as PostgresError where error.kind == .poolExhausted {
                            return clock.now - started
                        }
                    }
                    async let first = waiter(setsOutAt: .milliseconds(200))
                    async let second = waiter(setsOutAt: .milliseconds(500))
                    let (firstGaveUp, secondGaveUp) = try await (first, second)
                    // The third sets out once the others have given up, so it waits alone with its
                    // whole timeout ahead of it, however late a loaded machine ran the others.
                    async let third = waiter(setsOutAt: .zero)
                    await waitUntil("the third waiter waits") { pool.statistics.waiting == 1 }
                    try await gate.open()
                    let thirdGaveUp = try await third
                    _ = try await holder
                    #expect(try #require(firstGaveUp) >= .milliseconds(10_200))
                    #expect(try #require(secondGaveUp) >= .milliseconds(10_500))
                    #expect(thirdGaveUp == nil)
                    #expect(pool.statistics.waiting == 0)
                }
            }
        }
    }

    @Test("after pg_terminate_backend of every pooled connection the next query succeeds")
    func recoversFromTerminatedBackend() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 2) { pool in
                async let first: PostgresRows = pool.query("select pg_sleep(0.2)")
                async let second: PostgresRows = pool.query("select pg_sleep(0.2)")
                _ = try await (first, second)
                #expect(pool.statistics.idle == 2)
                try await TestDatabase.withAdminPool { admin in
                    let rows = try await admin.query("""
                        select pg_terminate_backend(pid) as done from pg_stat_activity
                        where datname = \(configuration.database!) and pid <> pg_backend_pid()
                        """)
                    #expect(rows.count == 2)
                    await waitUntil("the terminated backends have exited") {
                        let left = try? await admin.query("""
                            select count(*)::int8 as n from pg_stat_activity where datname = \(configuration.database!) and pid <> pg_backend_pid()
                            """).first?.decode("n", as: Int.self)
                        return left == 0
                    }
                }
                for _ in 0..<10 {
                    let rowCount = try await pool.query("select 1").count
                    #expect(rowCount == 1)
                }
            }
        }
    }

    @Test("one query after another reuses the idle connection instead of opening more")
    func sequentialQueriesReuseOneConnection() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 4) { pool in
                for _ in 0..<10 {
                    let rowCount = try await pool.query("select 1").count
                    #expect(rowCount == 1)
                }
                #expect(pool.statistics.idle == 1)
                #expect(pool.statistics.inUse == 0)
            }
        }
    }

    @Test("tasks that prefer the pool's I/O threads run their queries there, and still finish once the pool is closed", .timeLimit(.minutes(1)))
    func ioThreadsAsTaskExecutors() async throws {
        try await TestDatabase.with { configuration in
            let pool = PostgresPool(configuration: configuration, options: .init(size: 4, ioThreads: 2), logger: TestDatabase.logger)
            let sums = try await withThrowingTaskGroup(of: Int.self) { group in
                for task in 0..<8 {
                    group.addTask(executorPreference: pool.executor) {
                        var sum = 0
                        for n in 0..<50 {
                            let rows = try await pool.query("select \(n)::int8 + \(task)::int8 as total")
                            sum += try rows.first!.decode("total", as: Int.self)
                        }
                        return sum
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(sums.sorted() == (0..<8).map { 1225 + 50 * $0 })
            try await pool.close()
            // The I/O threads are gone; a task that still prefers one must run somewhere and fail cleanly.
            let finished = Flag()
            Task(executorPreference: pool.executor) {
                await #expect(throws: PostgresError.self) { try await pool.query("select 1") }
                await finished.set()
            }
            // Polled rather than awaited: a task that never runs would hang the test.
            try await waitUntil("a task preferring a stopped I/O thread to run", within: .seconds(5)) { await finished.value }
        }
    }

    @Test("LISTEN delivers NOTIFY payloads as an async sequence")
    func listenNotify() async throws {
        try await TestDatabase.with { configuration in
            let notifications = PostgresListener.notifications(configuration: configuration, channels: ["diary_events"], logger: TestDatabase.logger)
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                // LISTEN runs on the listener's own thread; send until the first one arrives.
                let sender = Task {
                    for index in 0..<50 {
                        try await pool.query("select pg_notify('diary_events', \("hello \(index)"))")
                        try await pace(.milliseconds(100))
                    }
                }
                var iterator = notifications.makeAsyncIterator()
                let received = await iterator.next()
                sender.cancel()
                _ = await sender.result
                #expect(received?.channel == "diary_events")
                #expect(received?.payload.hasPrefix("hello ") == true)
            }
        }
    }

    /// Fixed: the delay used to double on every reconnect for the life of the process, so a
    /// listener that lost its connection now and then was soon 5 s late each time.
    @Test("a listener that reconnected and listened waits the backoff's base after its next failure, not a doubled delay")
    func listenerBackoffStartsOver() async throws {
        try await TestDatabase.with { configuration in
            let recorder = LogRecorder()
            let notifications = PostgresListener.notifications(configuration: configuration, channels: ["diary_events"], logger: recorder.logger())
            defer { _ = notifications }
            try await TestDatabase.withAdminPool { admin in
                func listeningBackend() async throws -> Int32? {
                    try await admin.query("""
                        select pid from pg_stat_activity where datname = \(configuration.database!) and query ilike 'listen%'
                        """).first?.decode("pid", as: Int32.self)
                }
                var backend = try await waitForValue("the listener listens") { try await listeningBackend() }
                for _ in 0..<3 {
                    try await admin.query("select pg_terminate_backend(\(backend))")
                    let previous = backend
                    backend = try await waitForValue("the listener listens again") { try await listeningBackend().flatMap { $0 == previous ? nil : $0 } }
                }
            }
            let delays = recorder.all.filter { $0.message == "postgres listener reconnecting" }.compactMap { $0.metadata["retryIn"] }
            #expect(delays == Array(repeating: "\(PostgresListener.reconnection.base)", count: 3), "\(delays)")
        }
    }

    @Test("a listener says it may have missed notifications each time it begins listening: at first, and after each reconnect")
    func listenerTellsOfGaps() async throws {
        try await TestDatabase.with { configuration in
            let gaps = NIOLockedValueBox(0)
            let notifications = PostgresListener.notifications(
                configuration: configuration, channels: ["diary_events"], logger: TestDatabase.logger, onMissed: { gaps.withLockedValue { $0 += 1 } })
            defer { _ = notifications }
            try await waitUntil("the listener listens", within: .seconds(15)) { gaps.withLockedValue { $0 } == 1 }
            try await TestDatabase.withAdminPool { admin in
                for reconnect in 1...2 {
                    try await admin.query("""
                        select pg_terminate_backend(pid) from pg_stat_activity where datname = \(configuration.database!) and query ilike 'listen%'
                        """)
                    try await waitUntil("the listener listens again", within: .seconds(15)) { gaps.withLockedValue { $0 } == 1 + reconnect }
                }
            }
        }
    }
}

