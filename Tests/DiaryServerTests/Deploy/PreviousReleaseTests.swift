import AsyncHTTPClient
import DiaryModels
import Foundation
import PostgresClient
import Testing
import TestSupport

/// A deploy migrates first and then replaces the servers one at a time, so the release still
/// serving (`releases/previous`) must keep working against this checkout's schema.
/// `scripts/test-previous-release.sh` builds that release and runs this suite with
/// PREVIOUS_RELEASE_BIN (its binary) and PREVIOUS_RELEASE_SOURCE (its source, for its
/// migrations), as test plan previous-release (Tests/test-plans.txt); without them it fails.
@Suite("The previous release against today's schema", .timeLimit(.minutes(5)))
struct PreviousReleaseTests {
    /// A diary as the previous release answers it: read by what every release carries, not by
    /// today's `Diary`, whose fields a release that predates them does not send (`inviteUrl`).
    struct CreatedDiary: Decodable {
        var id: UUID
        var inviteCode: String
    }

    @Test("the release still serving serves, beside today's server, on the schema migrated under it: the README's curl flow, a post seen on a socket of each, delta sync from a cursor taken before the migration")
    func servesAgainstTodaysSchema() async throws {
        let previous = try PreviousRelease.current()
        try await TestDatabase.with { database in
            // As in production: the owner owns the database, and so its public schema.
            try await TestDatabase.withAdminPool { try await $0.query(PostgresQuery(unsafeSQL: "alter database \(database.database!) owner to \(TestDatabase.ownerRole)")) }
            let owner = try ServerProcess.url(of: database.as(TestDatabase.ownerRole))
            let before = try await ServerProcess.runCommand(["migrate", "--migrations", previous.migrations, "--database-url", owner], binary: previous.binary)
            try #require(before.status == 0, "the previous release's migrate: \(before.output)")

            let shared = FileManager.default.temporaryDirectory.appendingPathComponent("diary-deploy-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true)
            let old = try ServerProcess(database: database.as(TestDatabase.appRole), dataDirectory: shared, binary: previous.binary)
            defer { old.kill() }
            let http = HTTPClient.shared
            try await old.waitUntilHealthy(http)

            // What clients hold when the migration runs: sessions, a diary, and a cursor. Not the
            // README's aiko and ben, whose flow below must start from nothing.
            let mika = try await old.request(http, .POST, "/v1/auth/dev", json: #"{"name":"mika"}"#).decode(Session.self)
            let ren = try await old.request(http, .POST, "/v1/auth/dev", json: #"{"name":"ren"}"#).decode(Session.self)
            let diary = try await old.request(http, .POST, "/v1/diaries", token: mika.accessToken, json: #"{"name":"ふたり","type":"couple"}"#, expecting: 201).decode(CreatedDiary.self)
            _ = try await old.request(http, .POST, "/v1/diaries/join", token: ren.accessToken, json: #"{"inviteCode":"\#(diary.inviteCode)"}"#)
            _ = try await old.request(http, .POST, "/v1/diaries/\(diary.id)/entries", token: mika.accessToken, json: #"{"content":"移行の前"}"#, expecting: 201)
            let page = try await old.request(http, .GET, "/v1/diaries/\(diary.id)/entries?limit=20", token: ren.accessToken).decode(EntryPage.self)
            let cursor = try #require(page.changesCursor)

            let after = try await ServerProcess.runCommand(["migrate", "--database-url", owner])
            try #require(after.status == 0, "today's migrate: \(after.output)")
            let new = try ServerProcess(database: database.as(TestDatabase.appRole), dataDirectory: shared)
            defer { new.kill() }
            try await new.waitUntilHealthy(http)

            let flow = try await Self.readmeCurlFlow(against: old.port)
            #expect(flow.status == 0, "the README's curl flow on the previous release: \(flow.output)")
            // The timeline's answer: both entries, and ben's receipt on aiko's.
            #expect(flow.output.contains(#""content":"今日は晴れ""#) && flow.output.contains(#""content":"こちらは雨""#), "\(flow.output)")
            #expect(flow.output.contains(#""readBy":[{"#), "\(flow.output)")

            let sockets = [TestSocket(port: old.port, token: ren.accessToken), TestSocket(port: new.port, token: ren.accessToken)]
            defer { sockets.forEach { $0.close() } }
            for socket in sockets { #expect(try await socket.nextType() == "ready") }
            var posted: [UUID] = []
            for server in [new, old] {
                let entry = try await server.request(
                    http, .POST, "/v1/diaries/\(diary.id)/entries", token: mika.accessToken, json: #"{"content":"サーバー \#(server.port) から"}"#, expecting: 201
                ).decode(Entry.self)
                posted.append(entry.id)
                for socket in sockets {
                    let event = try await socket.event(.entryCreated, within: .seconds(30))
                    #expect(event.diaryId == diary.id)
                    guard case .entry(let seen) = event.data else { Issue.record("entry.created without its entry"); continue }
                    #expect(seen.id == entry.id)
                }
            }

            let changes = try await old.request(http, .GET, "/v1/diaries/\(diary.id)/changes?since=\(cursor)&limit=100", token: ren.accessToken).decode(ChangeList.self)
            let created = changes.changes.filter { $0.type == .entryCreated }.compactMap { event -> UUID? in
                if case .entry(let entry) = event.data { entry.id } else { nil }
            }
            #expect(posted.allSatisfy(created.contains), "\(changes.changes.map(\.type))")
            #expect(!changes.hasMore)
        }
    }

    /// The README's tour as written, against `port`: curl fails on an error status, and so
    /// does the block. It writes no file, so any folder serves.
    static func readmeCurlFlow(against port: Int) async throws -> (status: Int32, output: String) {
        try await DocumentedCommand.run([try DocumentedCommand.tour().text], api: "http://127.0.0.1:\(port)", in: FileManager.default.temporaryDirectory)
    }
}

/// The release still serving, as `scripts/test-previous-release.sh` built it.
struct PreviousRelease {
    var binary: URL
    var migrations: String

    static func current() throws -> PreviousRelease {
        let binary = try TestPlan.setting("PREVIOUS_RELEASE_BIN", plan: "previous-release")
        let source = try TestPlan.setting("PREVIOUS_RELEASE_SOURCE", plan: "previous-release")
        return PreviousRelease(binary: URL(fileURLWithPath: binary), migrations: source + "/sql/migrations")
    }
}
