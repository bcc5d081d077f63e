import DiaryModels
import Foundation
import Hummingbird
import HummingbirdTesting
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// Faults a production database has: killed backends, a full pool, a slow statement,
/// more clients than the server can serve, a client that hangs up. Each test is bounded
/// in time, and each asserts what the client sees: a 503 or 504 problem, never a 500 or
/// a hang, and never a lost entry.
@Suite("Faults", .timeLimit(.minutes(2)))
struct FaultTests {
    @Test("killed backends: affected requests get 503 within 1 s, every 201 was kept, the next 100 succeed")
    func killedConnections() async throws {
        try await APIHarness.run(poolSize: 4, acquireTimeout: .seconds(1)) { api in
            let aiko = try await api.signIn("aiko")
            let diary = try await api.createDiary("日記", type: .family, token: aiko.accessToken)
            let stream = LoadStream(api: api, token: aiko.accessToken, diary: diary.id)
            let (outcomes, killed) = try await stream.run {
                var killed = 0
                for _ in 0..<4 {
                    try await pace(.milliseconds(150))
                    killed += try await api.terminateServerConnections()
                }
                return killed
            }
            #expect(killed > 0)
            #expect(outcomes.count > 40)
            let failures = outcomes.filter { $0.status.code >= 300 }
            #expect(failures.allSatisfy { $0.status == .serviceUnavailable }, "statuses: \(Set(failures.map(\.status.code)))")
            let slowest = outcomes.map(\.duration).max() ?? .zero
            #expect(slowest < .seconds(1), "slowest request took \(slowest)")
            try await api.expectKept(outcomes)
            for index in 0..<100 {
                let outcome = try await stream.one(post: index % 2 == 0)
                #expect(outcome.status.code < 300, "request \(index) after the kills answered \(outcome.status)")
            }
        }
    }

    @Test("a pool of 2 held by long queries: 503 + Retry-After within the acquisition timeout + 0.2 s; /health stays 200")
    func poolExhaustion() async throws {
        let acquireTimeout = Duration.milliseconds(400)
        try await APIHarness.run(poolSize: 2, acquireTimeout: acquireTimeout) { api in
            let aiko = try await api.signIn("aiko")
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<2 {
                    group.addTask { try await api.pool.query("select pg_sleep(1.5)") }
                }
                try await waitUntil("both connections are held") { api.pool.statistics.inUse >= 2 }
                let started = ContinuousClock.now
                let reply = try await api.call(.get, "/v1/me", token: aiko.accessToken)
                let waited = ContinuousClock.now - started
                #expect(reply.status == .serviceUnavailable && reply.code == "pool_exhausted")
                #expect(Int(reply.headers[.retryAfter] ?? "") ?? 0 >= 1)
                #expect(waited < acquireTimeout + .milliseconds(200), "answered after \(waited)")
                #expect(try await api.call(.get, "/health").status == .ok)
                try await group.waitForAll()
            }
            #expect(try await api.call(.get, "/v1/me", token: aiko.accessToken).status == .ok)
        }
    }

    @Test("a statement past statement_timeout (57014) answers 504 within the timeout, and the connection is reused")
    func statementTimeout() async throws {
        let timeout = Duration.milliseconds(300)
        try await APIHarness.run(poolSize: 1, statementTimeout: timeout) { api in
            let aiko = try await api.signIn("aiko")
            let diary = try await api.createDiary("日記", type: .couple, token: aiko.accessToken)
            let backendBefore = try await api.serverBackends()
            #expect(backendBefore.count == 1)
            // Another session holds the entries table, so the timeline waits until the server cancels it.
            try await TestDatabase.withPool(api.database, size: 1) { blocker in
                try await blocker.withTransaction { connection in
                    try await connection.query("lock table entries in access exclusive mode")
                    let started = ContinuousClock.now
                    let reply = try await api.call(.get, "/v1/diaries/\(diary.id)/entries", token: aiko.accessToken)
                    let waited = ContinuousClock.now - started
                    #expect(reply.status == .gatewayTimeout && reply.code == "timeout", "\(reply.status) \(reply.text)")
                    #expect(waited < timeout + .milliseconds(300), "answered after \(waited)")
                }
            }
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/entries", token: aiko.accessToken).status == .ok)
            #expect(try await api.serverBackends() == backendBefore)
        }
    }

    @Test("5× more concurrent requests than the limit: the excess gets 503 overloaded at once, the admitted succeed, no 500")
    func overload() async throws {
        let limit = 4
        try await APIHarness.run(poolSize: 2, maxConcurrentRequests: limit) { api in
            let aiko = try await api.signIn("aiko")
            let diary = try await api.createDiary("日記", type: .family, token: aiko.accessToken)
            let stream = LoadStream(api: api, token: aiko.accessToken, diary: diary.id)
            // The admitted requests wait on a lock, held until every refused one has come back.
            let outcomes = try await withThrowingTaskGroup(of: LoadStream.Outcome?.self) { group in
                let locked = LockedValue(false)
                let returned = LockedValue(0)
                group.addTask {
                    try await TestDatabase.withPool(api.database, size: 1) { blocker in
                        try await blocker.withTransaction { connection in
                            try await connection.query("lock table entries in access exclusive mode")
                            locked.value = true
                            try await waitUntil("the refused requests to come back", within: .seconds(30)) { returned.value >= 4 * limit }
                        }
                    }
                    return nil
                }
                try await waitUntil("entries are locked") { locked.value }
                for _ in 0..<(5 * limit) {
                    group.addTask {
                        let outcome = try await stream.one(post: false)
                        returned.mutate { $0 += 1 }
                        return outcome
                    }
                }
                var outcomes: [LoadStream.Outcome] = []
                for try await outcome in group { if let outcome { outcomes.append(outcome) } }
                return outcomes
            }
            #expect(outcomes.count == 5 * limit)
            #expect(!outcomes.contains { $0.status.code >= 500 && $0.status != .serviceUnavailable })
            #expect(outcomes.filter { $0.status == .ok }.count == limit)
            let refused = outcomes.filter { $0.status == .serviceUnavailable }
            #expect(refused.count == 4 * limit)
            #expect(refused.allSatisfy { $0.code == "overloaded" && $0.duration < .milliseconds(100) })
            #expect(try await api.call(.get, "/health").status == .ok)
            // The admitted ones finished once the lock went; the limit is free again.
            for _ in 0..<(2 * limit) {
                let outcome = try await stream.one(post: false)
                #expect(outcome.status == .ok)
            }
            let metrics = try await api.call(.get, "/metrics").text
            #expect(metrics.contains(#"rate_limit_rejections_total{limit="concurrency"}"#))
        }
    }

    @Test("a client hangs up right after sending POST entry, then retries with the same id: exactly one entry")
    func lostResponse() async throws {
        try await APIHarness.run(testing: .live) { api in
            let aiko = try await api.signIn("aiko")
            let diary = try await api.createDiary("日記", type: .couple, token: aiko.accessToken)
            let port = try #require(api.client.port)
            for _ in 0..<5 {
                let id = UUID()
                let body = #"{"id":"\#(id)","content":"届いたかな"}"#
                try await RawHTTP.sendAndHangUp(port: port, request: """
                    POST /v1/diaries/\(diary.id)/entries HTTP/1.1\r
                    Host: 127.0.0.1\r
                    Authorization: Bearer \(aiko.accessToken)\r
                    Content-Type: application/json\r
                    Content-Length: \(body.utf8.count)\r
                    \r
                    \(body)
                    """)
                let retry = try await api.post("届いたかな", in: diary.id, token: aiko.accessToken, id: id)
                #expect(retry.status == .created || retry.status == .ok, "\(retry.status) \(retry.text)")
                let count = try #require(try await api.asSuperuser("select count(*)::int8 as n from entries where id = \(id)").first)
                #expect(try count.decode("n", as: Int.self) == 1)
            }
        }
    }
}

extension APIHarness {
    /// pg_terminate_backend on every connection the server has open; returns how many.
    func terminateServerConnections() async throws -> Int {
        let rows = try await asSuperuser("""
            select count(*)::int8 as n from (
                select pg_terminate_backend(pid) from pg_stat_activity
                where datname = current_database() and usename = \(TestDatabase.appRole)
            ) as terminated
            """)
        return try rows.first?.decode("n", as: Int.self) ?? 0
    }

    /// The request pool's backends, by the name only requests' connections carry: every
    /// background worker names its own, so a new worker cannot be counted here.
    func serverBackends() async throws -> [Int] {
        let rows = try await asSuperuser("""
            select pid::int8 as pid from pg_stat_activity
            where datname = current_database() and usename = \(TestDatabase.appRole)
              and application_name = \(PostgresConfiguration.defaultApplicationName)
            order by pid
            """)
        return try rows.map { try $0.decode("pid", as: Int.self) }
    }

    /// Every post the client saw answered 201 is in the database.
    func expectKept(_ outcomes: [LoadStream.Outcome], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let created = outcomes.filter { $0.status == .created }.compactMap(\.postedEntry)
        let rows = try await asSuperuser("select count(*)::int8 as n from entries where id = any(\(created))")
        let kept = try rows.first?.decode("n", as: Int.self) ?? 0
        #expect(kept == created.count, "\(created.count - kept) of \(created.count) acknowledged entries are missing", sourceLocation: sourceLocation)
        let read = Array(Set(outcomes.filter { $0.status.code < 300 }.compactMap(\.readEntry)))
        guard !read.isEmpty else { return }
        let receipts = try await asSuperuser("select count(distinct entry_id)::int8 as n from entry_reads where entry_id = any(\(read))")
        let keptReads = try receipts.first?.decode("n", as: Int.self) ?? 0
        #expect(keptReads == read.count, "\(read.count - keptReads) of \(read.count) acknowledged reads are missing", sourceLocation: sourceLocation)
    }
}
