import APNSTestServer
import AsyncHTTPClient
import DiaryModels
import Foundation
import PostgresClient
import Testing
import TestSupport

/// The outbox across `diary-server serve` processes: shared without duplicates, and
/// nothing lost to kill -9.
@Suite("Push across processes", .timeLimit(.minutes(4)))
struct PushProcessTests {
    /// alice posts `entries` entries in a family diary whose other members hold `devices`
    /// devices in all, through `server` (and the posts through each of `posting` in turn):
    /// entries × devices notifications.
    static func burst(
        _ server: ServerProcess, posting: [ServerProcess]? = nil, _ http: HTTPClient, members: Int, devicesEach: Int, entries: Int
    ) async throws -> Int {
        let posting = posting ?? [server]
        let alice = try await server.request(http, .POST, "/v1/auth/dev", json: #"{"name":"alice"}"#).decode(Session.self)
        let diary = try await server.request(http, .POST, "/v1/diaries", token: alice.accessToken, json: #"{"name":"みんな","type":"family"}"#, expecting: 201).decode(Diary.self)
        for member in 0..<members {
            let session = try await server.request(http, .POST, "/v1/auth/dev", json: #"{"name":"member\#(member)"}"#).decode(Session.self)
            _ = try await server.request(http, .POST, "/v1/diaries/join", token: session.accessToken, json: #"{"inviteCode":"\#(diary.inviteCode)"}"#)
            for _ in 0..<devicesEach {
                _ = try await server.request(
                    http, .PUT, "/v1/me/devices/\(PushFixture.deviceToken())", token: session.accessToken, json: #"{"environment":"production"}"#, expecting: 204)
            }
        }
        for index in 0..<entries {
            _ = try await posting[index % posting.count].request(
                http, .POST, "/v1/diaries/\(diary.id)/entries", token: alice.accessToken, json: #"{"content":"\#(index)"}"#, expecting: 201)
        }
        return members * devicesEach * entries
    }

    /// Each notification is (device, entry); how many of them arrived more than once.
    static func duplicates(_ requests: [APNSStandIn.Request]) -> Int {
        let keys = requests.map { "\($0.deviceToken) \($0.payload["entryId"] as? String ?? "")" }
        return keys.count - Set(keys).count
    }

    static func outboxIsEmpty(_ database: PostgresConfiguration) async throws -> Bool {
        try await TestDatabase.withPool(database, size: 1) { pool in
            try await pool.query("select count(*) from push_outbox").first!.decode("count", as: Int.self) == 0
        }
    }

    @Test("two servers share the outbox: every notification arrives once")
    func twoServers() async throws {
        let push = try await PushFixture.start()
        defer { Task { try? await push.standIn.shutdown() } }
        push.standIn.respond { _ in .delayed(milliseconds: 20, .ok) }
        try await MigratedTemplate.withDatabase { database in
            let shared = FileManager.default.temporaryDirectory.appendingPathComponent("diary-shared-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true)
            let first = try ServerProcess(database: database.as(TestDatabase.appRole), dataDirectory: shared, environment: push.environment)
            defer { first.kill() }
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            do {
                try await first.waitUntilHealthy(http)
                let second = try ServerProcess(database: database.as(TestDatabase.appRole), dataDirectory: shared, environment: push.environment)
                defer { second.kill() }
                try await second.waitUntilHealthy(http)
                // Posts go through both servers, so both wake and claim.
                let expected = try await Self.burst(first, posting: [first, second], http, members: 4, devicesEach: 5, entries: 10)
                _ = try await push.standIn.waitForRequests(count: expected, timeout: .seconds(60))
                // Sent rows leave the outbox once settled: with it empty, no request is left to make.
                try await waitUntil(within: .seconds(20)) { try await Self.outboxIsEmpty(database) }
                #expect(push.standIn.requests.count == expected)
                #expect(Self.duplicates(push.standIn.requests) == 0)
                #expect(push.standIn.violations.isEmpty, "\(push.standIn.violations.prefix(3))")
            } catch {
                try? await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }

    @Test("kill -9 in the middle of a burst of 500: all delivered after restart; only rows in flight are sent twice")
    func killedMidBurst() async throws {
        let push = try await PushFixture.start()
        defer { Task { try? await push.standIn.shutdown() } }
        // Slow answers keep a batch in flight long enough to be killed in.
        push.standIn.respond { _ in .delayed(milliseconds: 300, .ok) }
        try await MigratedTemplate.withDatabase { database in
            let shared = FileManager.default.temporaryDirectory.appendingPathComponent("diary-shared-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true)
            var environment = push.environment
            // The request timeout is half the lease. At 4 s (2 s timeouts) a loaded machine timed
            // out requests the stand-in had already counted, and a timed-out request is retried by
            // design, so those duplicates said nothing about the kill.
            environment["PUSH_LEASE_SECONDS"] = "12"
            let server = try ServerProcess(database: database.as(TestDatabase.appRole), dataDirectory: shared, environment: environment)
            defer { server.kill() }
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            do {
                try await server.waitUntilHealthy(http)
                let expected = try await Self.burst(server, http, members: 5, devicesEach: 5, entries: 20)
                #expect(expected == 500)
                _ = try await push.standIn.waitForRequests(count: 150, timeout: .seconds(60))
                server.kill()
                _ = try await server.waitForExit(within: .seconds(10))
                let beforeRestart = push.standIn.requests.count
                #expect(beforeRestart < expected, "the burst was still going when the server was killed")

                let restarted = try ServerProcess(database: database.as(TestDatabase.appRole), dataDirectory: shared, environment: environment)
                defer { restarted.kill() }
                try await restarted.waitUntilHealthy(http)
                try await waitUntil(within: .seconds(60)) { try await Self.outboxIsEmpty(database) }
                let requests = push.standIn.requests
                let delivered = Set(requests.map { "\($0.deviceToken) \($0.payload["entryId"] as? String ?? "")" })
                #expect(delivered.count == expected, "every notification arrived")
                let duplicates = Self.duplicates(requests)
                // A batch (100 rows) is in flight at a time: only those can arrive twice.
                #expect(duplicates <= 100, "\(duplicates) duplicates")
                print("push kill -9: \(requests.count) requests for \(expected) notifications, \(duplicates) duplicates, \(beforeRestart) sent before the kill")
            } catch {
                try? await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }
}
