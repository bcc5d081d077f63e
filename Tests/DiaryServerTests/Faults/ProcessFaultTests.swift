import AsyncHTTPClient
import DiaryModels
import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// Faults of whole processes: PostgreSQL restarting under the server, and the server
/// itself told to stop. These run on a cluster or a server process of their own.
@Suite("Process faults", .timeLimit(.minutes(3)))
struct ProcessFaultTests {
    @Test("pg_ctl restart -m fast under load: errors only inside the restart window, recovery within 5 s, no hang")
    func postgresRestart() async throws {
        try await ScratchCluster.with { cluster in
            let admin = cluster.superuser()
            _ = try await TestDatabase.withPool(admin, size: 1) { pool in
                try await pool.query("create database diary owner diary_owner")
            }
            let database = cluster.superuser(database: "diary")
            try await MigratedTemplate.migrate(database)
            let acquireTimeout = Duration.seconds(1)
            try await APIHarness.run(on: database, poolSize: 4, acquireTimeout: acquireTimeout) { api in
                let aiko = try await api.signIn("aiko")
                let diary = try await api.createDiary("日記", type: .family, token: aiko.accessToken)
                let stream = LoadStream(api: api, token: aiko.accessToken, diary: diary.id)
                let (outcomes, window) = try await stream.run(tail: .milliseconds(5_500)) {
                    try await pace(.milliseconds(300))
                    let began = ContinuousClock.now
                    try await cluster.restart()
                    return (began: began, accepting: ContinuousClock.now)
                }
                let failures = outcomes.filter { $0.status.code >= 300 }
                #expect(failures.allSatisfy { $0.status == .serviceUnavailable }, "statuses: \(Set(failures.map(\.status.code)))")
                #expect(failures.allSatisfy { $0.started + $0.duration >= window.began }, "a request failed before the restart began")
                let recovered = window.accepting + .seconds(5)
                #expect(failures.allSatisfy { $0.started < recovered }, "a request failed more than 5 s after Postgres accepted connections")
                let afterRecovery = outcomes.filter { $0.started >= recovered }
                #expect(afterRecovery.count >= 10 && afterRecovery.allSatisfy { $0.status.code < 300 })
                let slowest = outcomes.map(\.duration).max() ?? .zero
                #expect(slowest < acquireTimeout + .seconds(1), "slowest request took \(slowest)")
                try await api.expectKept(outcomes)
            }
        }
    }

    @Test("SIGTERM under load: in-flight requests finish, new ones are refused, exit 0 within 10 s, no entry lost")
    func gracefulShutdown() async throws {
        try await MigratedTemplate.withDatabase { database in
            let server = try ServerProcess(database: database.as(TestDatabase.appRole))
            defer { server.kill() }
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            do {
                try await server.waitUntilHealthy(http)
                let session = try await server.request(http, .POST, "/v1/auth/dev", json: #"{"name":"aiko"}"#).decode(Session.self)
                let diary = try await server.request(
                    http, .POST, "/v1/diaries", token: session.accessToken, json: #"{"name":"日記","type":"family"}"#
                ).decode(Diary.self)

                let signalled = LockedValue<ContinuousClock.Instant?>(nil)
                let exited = LockedValue<Task<(status: Int32, after: ContinuousClock.Instant), any Error>?>(nil)
                let results = try await withThrowingTaskGroup(of: [(UUID, Result<Int, any Error>)].self) { group in
                    for _ in 0..<8 {
                        group.addTask {
                            var results: [(UUID, Result<Int, any Error>)] = []
                            // Until refused: every request opens its own connection, so "refused" means the listener is gone.
                            while true {
                                let id = UUID()
                                do {
                                    let reply = try await server.request(
                                        http, .POST, "/v1/diaries/\(diary.id)/entries", token: session.accessToken,
                                        json: #"{"id":"\#(id)","content":"さいごまで"}"#, expecting: nil, timeout: .seconds(2)
                                    )
                                    results.append((id, .success(reply.status)))
                                } catch {
                                    results.append((id, .failure(error)))
                                    if signalled.value != nil { return results }
                                }
                            }
                        }
                    }
                    try await pace(.milliseconds(500))
                    signalled.value = .now
                    server.terminate()
                    exited.value = Task { try await server.waitForExit(within: .seconds(10)) }
                    var all: [(UUID, Result<Int, any Error>)] = []
                    for try await part in group { all += part }
                    return all
                }
                let exit = try await exited.value!.value
                #expect(exit.status == 0, "exit status \(exit.status)")
                #expect(exit.after - signalled.value! < .seconds(10))

                let statuses = results.compactMap { try? $0.1.get() }
                #expect(statuses.count > 20)
                #expect(statuses.allSatisfy { $0 == 201 || $0 == 503 }, "statuses: \(Set(statuses))")
                // Connections the server had accepted but not yet read a request from are closed
                // when it stops (RST or FIN); later ones are refused. Either way the request was
                // never carried out, so the client's retry with the same id is safe.
                let dropped = results.compactMap { id, result -> (UUID, String)? in
                    if case .failure(let error) = result { return (id, String(describing: error)) } else { return nil }
                }
                #expect(dropped.allSatisfy { ServerProcess.isRefusal($0.1) }, "errors other than a refused or unanswered connection: \(Set(dropped.map(\.1)))")
                let droppedIDs = dropped.map(\.0)
                let carriedOut = try await TestDatabase.withPool(database, size: 1) { pool in
                    try await pool.query("select count(*)::int8 as n from entries where id = any(\(droppedIDs))")
                }
                #expect(try carriedOut.first?.decode("n", as: Int.self) == 0, "a request was carried out but its connection dropped")
                let created = results.filter { (try? $0.1.get()) == 201 }.map(\.0)
                let rows = try await TestDatabase.withPool(database, size: 1) { pool in
                    try await pool.query("select count(*)::int8 as n from entries where id = any(\(created))")
                }
                #expect(try rows.first?.decode("n", as: Int.self) == created.count)
            } catch {
                try await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }

    @Test("a database unreachable at start: retried with growing delays for DB_WAIT_SECONDS, then exit 1 with the reason, the password masked")
    func unreachableDatabaseAtStart() async throws {
        let closedPort = try ScratchCluster.freePort()
        let started = ContinuousClock.now
        let server = try ServerProcess(databaseURL: "postgres://diary_app:pa55-word@127.0.0.1:\(closedPort)/diary", databaseWaitSeconds: 2)
        defer { server.kill() }
        let (status, ended) = try await server.waitForExit(within: .seconds(15))
        let log = try String(contentsOfFile: server.logPath, encoding: .utf8)
        #expect(status == 1, "log: \(log)")
        // It stops retrying once the next delay would pass the limit, so it ends a little before it.
        #expect(ended - started >= .seconds(1) && ended - started < .seconds(10), "exited after \(ended - started)")
        let retries = log.split(separator: "\n").filter { $0.contains("database unreachable, retrying") }
        #expect(retries.count >= 2, "log: \(log)")
        #expect(retries.first?.contains("retryIn=0.25 seconds") == true && retries.dropFirst().first?.contains("retryIn=0.5 seconds") == true, "log: \(log)")
        #expect(log.contains("unreachable after \(retries.count + 1) attempt(s)") && log.contains("Connection refused"), "log: \(log)")
        #expect(!log.contains("pa55-word"), "the password reached the log")
    }
}
