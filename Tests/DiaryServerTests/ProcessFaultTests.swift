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
                    try await Task.sleep(for: .milliseconds(300))
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
                    try await Task.sleep(for: .milliseconds(500))
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

/// The built `diary-server` binary, serving on a free port with development sign-in.
final class ServerProcess: Sendable {
    struct Reply: Sendable {
        var status: Int
        var body: Data

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try PostgresJSONCoding.decoder.decode(T.self, from: body)
        }
    }

    let port: Int
    private let process: SpawnedProcess
    let logPath: String

    static var binary: URL {
        ScratchCluster.packageRoot.appendingPathComponent(".build/debug/diary-server")
    }

    convenience init(database: PostgresConfiguration, dataDirectory: URL? = nil, environment: [String: String] = [:]) throws {
        try self.init(databaseURL: try Self.url(of: database), dataDirectory: dataDirectory, environment: environment)
    }

    /// `dataDirectory` holds the token key: processes that share one accept each other's tokens.
    /// `environment` adds to or replaces the test process's own.
    init(databaseURL: String, databaseWaitSeconds: Int = 5, dataDirectory: URL? = nil, environment extra: [String: String] = [:]) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary.path) else {
            throw HarnessError("\(Self.binary.path) is missing: build it first (`make test` runs `swift build --product diary-server`)")
        }
        port = try ScratchCluster.freePort()
        let scratch = dataDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("diary-process-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        logPath = scratch.appendingPathComponent("server-\(port).log").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = databaseURL
        environment["HOST"] = "127.0.0.1"
        environment["PORT"] = String(port)
        environment["DIARY_DEV_AUTH"] = "1"
        environment["DIARY_ENV"] = nil
        environment["DIARY_DATA_DIR"] = scratch.path
        environment["LOG_LEVEL"] = "notice"
        environment["DB_WAIT_SECONDS"] = String(databaseWaitSeconds)
        environment.merge(extra) { _, new in new }
        let process = try Spawn.start(Self.binary.path, ["serve"], environment: environment, outputPath: logPath)
        self.process = process
    }

    /// Runs the binary's subcommand `arguments` to its end and returns its exit status and
    /// its output and error streams together.
    static func runCommand(_ arguments: [String], adding extra: [String: String] = [:]) async throws -> (status: Int32, output: String) {
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw HarnessError("\(binary.path) is missing: build it first (`make test` runs `swift build --product diary-server`)")
        }
        let path = binary.path
        return try await Spawn.run(path, arguments, environment: extra.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(extra) { _, new in new })
    }

    /// DATABASE_URL for `database`, on the test cluster's socket as TEST_DATABASE_URL gives it.
    static func url(of database: PostgresConfiguration) throws -> String {
        guard var components = URLComponents(string: ProcessInfo.processInfo.environment["TEST_DATABASE_URL"] ?? "") else {
            throw HarnessError("TEST_DATABASE_URL is not set")
        }
        components.user = database.user
        components.path = "/" + (database.database ?? "")
        return components.string!
    }

    func terminate() { _ = Foundation.kill(process.pid, SIGTERM) }

    func kill() {
        if process.isRunning { _ = Foundation.kill(process.pid, SIGKILL) }
    }

    func waitForExit(within limit: Duration) async throws -> (status: Int32, after: ContinuousClock.Instant) {
        let deadline = ContinuousClock.now + limit
        while process.isRunning {
            guard ContinuousClock.now < deadline else { throw HarnessError("the server did not exit within \(limit); log: \(logPath)") }
            try await Task.sleep(for: .milliseconds(20))
        }
        return (process.terminationStatus, .now)
    }

    func waitUntilHealthy(_ http: HTTPClient) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let reply = try? await request(http, .GET, "/health", expecting: nil), reply.status == 200 { return }
            guard process.isRunning else { throw HarnessError("the server exited at start-up; log: \(logPath)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw HarnessError("the server did not become healthy; log: \(logPath)")
    }

    /// One request on a connection of its own (`Connection: close`).
    func request(
        _ http: HTTPClient, _ method: HTTPMethod, _ path: String, token: String? = nil, json: String? = nil, expecting expected: Int? = 200,
        timeout: TimeAmount = .seconds(10)
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        request.headers.add(name: "Connection", value: "close")
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        // AHC retries a refused connection until the deadline, so the deadline bounds how long "refused" takes to show.
        let response = try await http.execute(request, timeout: timeout)
        let body = try await response.body.collect(upTo: 1 << 20)
        let reply = Reply(status: Int(response.status.code), body: Data(buffer: body))
        if let expected, reply.status != expected && !(expected == 200 && reply.status == 201) {
            throw HarnessError("\(method) \(path) answered \(reply.status): \(String(decoding: reply.body, as: UTF8.self))")
        }
        return reply
    }

    /// A connection refused, or closed before a response: what a stopping server does to requests it has not started.
    /// "I/O on closed channel" is the client finding the connection already closed when it writes the request.
    static func isRefusal(_ description: String) -> Bool {
        ["Connection refused", "Connection reset by peer", "remoteConnectionClosed", "I/O on closed channel"].contains { description.contains($0) }
    }
}
