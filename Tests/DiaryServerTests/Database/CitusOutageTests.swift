import DiaryModels
import Foundation
import HTTPTypes
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP

/// One Citus worker stopped under a running server, run by scripts/test-citus.sh after the
/// cluster suite (CITUS_OUTAGE_DATABASE_URL), which it would otherwise disturb: a diary on the
/// other worker goes on as usual, a diary on the stopped one and every write that must reach
/// every node answer 503 with Retry-After, and nothing acknowledged is lost.
@Suite("A Citus worker's outage", .serialized, .enabled(if: ProcessInfo.processInfo.environment["CITUS_OUTAGE_DATABASE_URL"] != nil))
struct CitusOutageTests {
    static let stoppedWorker = "worker2"
    /// Above the 4 s in which the coordinator gives up a worker's connection
    /// (`CitusSchema.workerConnectionTimeoutMilliseconds`), with room for a loaded machine.
    static let statementTimeout = Duration.seconds(8)

    static func owner() throws -> PostgresConfiguration {
        try PostgresConfiguration(url: ProcessInfo.processInfo.environment["CITUS_OUTAGE_DATABASE_URL"] ?? "").as(TestDatabase.ownerRole)
    }

    static func citus(_ command: String) async throws {
        let script = ScratchCluster.packageRoot.appendingPathComponent("scripts/citus.sh").path
        let result = try await Spawn.run(script, [command, stoppedWorker])
        try #require(result.status == 0, "scripts/citus.sh \(command) \(stoppedWorker): \(result.output)")
    }

    static func stoppedPort() throws -> Int {
        let file = ScratchCluster.packageRoot.appendingPathComponent(".data/postgres-citus-\(stoppedWorker)/port").path
        return try #require(Int(try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    /// The port of the worker that holds `diary`'s shard.
    static func worker(of diary: UUID, _ api: APIHarness) async throws -> Int {
        let rows = try await api.asSuperuser("""
            select nodeport from citus_shards
            where table_name = 'diaries'::regclass and shardid = get_shard_id_for_distribution_column('diaries', \(diary))
            """)
        return try #require(try rows.first?.decode("nodeport", as: Int.self))
    }

    @Test("one worker stopped: a diary on the other answers as usual; a diary on the stopped one, and writes that reach every node, answer 503 with Retry-After within the statement timeout; an existing user signs in; once it is back, everything acknowledged is there")
    func oneWorkerStopped() async throws {
        let stopped = try Self.stoppedPort()
        try await APIHarness.run(on: try Self.owner(), statementTimeout: Self.statementTimeout, citus: true) { api in
            let tag = String(UUID().uuidString.prefix(8)).lowercased()
            let alice = try await api.signIn("outage-alice-\(tag)"), bob = try await api.signIn("outage-bob-\(tag)")
            var kept: Diary?, lost: Diary?
            for index in 0..<40 where kept == nil || lost == nil {
                let diary = try await api.createDiary("障害 \(index)", type: .family, token: alice.accessToken)
                if try await Self.worker(of: diary.id, api) == stopped { lost = lost ?? diary } else { kept = kept ?? diary }
            }
            let keptDiary = try #require(kept), lostDiary = try #require(lost)
            for diary in [keptDiary, lostDiary] { #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok) }
            // In the running worker's diary alone.
            let carol = try await api.signIn("outage-carol-\(tag)")
            #expect(try await api.join(keptDiary.inviteCode, token: carol.accessToken).status == .ok)
            let before = try await api.post("止まる前", in: keptDiary.id, token: alice.accessToken).decode(Entry.self)
            let lostEntry = try await api.post("向こう側", in: lostDiary.id, token: alice.accessToken).decode(Entry.self)
            let since = try await ChangeLogTests.cursor(api, keptDiary.id, token: bob.accessToken)

            // The worker stopped, and its port taken by a listener that never answers: a worker
            // behind a network that drops its packets, whose connections time out rather than
            // fail at once.
            try await Self.citus("stop-node")
            let during: Entry
            do {
                let silent = try SilentListener(port: stopped)
                defer { silent.close() }
                during = try await Self.duringTheOutage(api, alice: alice, bob: bob, kept: keptDiary, lost: lostDiary, before: before, lostEntry: lostEntry, since: since, tag: tag)
                // The home list reads each diary on its own shard: carol's, all on the running
                // worker, answers; bob's, with one on the stopped worker, is 503.
                let carols = try await api.call(.get, "/v1/diaries", token: carol.accessToken)
                #expect(carols.status == .ok && (try? carols.decode(DiaryList.self).diaries.map(\.id)) == [keptDiary.id], "\(carols.status) \(carols.text)")
                let bobs = try await api.call(.get, "/v1/diaries", token: bob.accessToken)
                #expect(bobs.status == .serviceUnavailable, "\(bobs.status) \(bobs.text)")
            } catch {
                try? await Self.citus("start-node")
                throw error
            }
            try await Self.citus("start-node")

            // Everything acknowledged before and during the outage is there: the post made
            // meanwhile, its edit, and the deletion of the one before.
            let timeline = try await api.call(.get, "/v1/diaries/\(keptDiary.id)/entries", token: bob.accessToken).decode(EntryPage.self)
            #expect(timeline.entries.map(\.id) == [during.id])
            #expect(timeline.entries.first?.content == "書き直し")
            try await waitUntil("the stopped worker's diary answers again") {
                try await api.call(.get, "/v1/diaries/\(lostDiary.id)/entries/\(lostEntry.id)", token: bob.accessToken).status == .ok
            }
            let after = try await api.post("戻った後", in: lostDiary.id, token: alice.accessToken)
            #expect(after.status == .created, "\(after.text)")
        }
    }

    /// What the server answers while the worker is down; returns the entry posted meanwhile.
    static func duringTheOutage(
        _ api: APIHarness, alice: Session, bob: Session, kept: Diary, lost: Diary, before: Entry, lostEntry: Entry, since: String, tag: String
    ) async throws -> Entry {
        // Every one-diary route of the diary on the running worker.
        let posted = try await api.post("止まっている間", in: kept.id, token: alice.accessToken)
        #expect(posted.status == .created, "POST entry: \(posted.status) \(posted.text)")
        let during = try posted.decode(Entry.self)
        let reads: [(HTTPRequest.Method, String, String?)] = [
            (.get, "/v1/diaries/\(kept.id)", nil),
            (.get, "/v1/diaries/\(kept.id)/members", nil),
            (.get, "/v1/diaries/\(kept.id)/entries", nil),
            (.get, "/v1/diaries/\(kept.id)/entries/\(before.id)", nil),
            (.get, "/v1/diaries/\(kept.id)/entries/\(before.id)/reads", nil),
            (.get, "/v1/diaries/\(kept.id)/calendar?month=\(CitusClusterTests.month())", nil),
            (.get, "/v1/diaries/\(kept.id)/changes?since=\(since)", nil),
            (.post, "/v1/diaries/\(kept.id)/entries/\(before.id)/read", nil),
            (.patch, "/v1/diaries/\(kept.id)/entries/\(during.id)", #"{"content":"書き直し"}"#),
            (.patch, "/v1/diaries/\(kept.id)", #"{"name":"改名"}"#),
            (.delete, "/v1/diaries/\(kept.id)/entries/\(before.id)", nil),
        ]
        for (method, path, json) in reads {
            let token = method == .post ? bob.accessToken : alice.accessToken
            let reply = if let json { try await api.call(method, path, token: token, json: json) } else { try await api.call(method, path, token: token) }
            #expect(reply.status.code < 300, "\(method) \(path): \(reply.status) \(reply.text)")
        }

        // The diary on the stopped worker: 503 with Retry-After, within the statement timeout.
        for path in ["/v1/diaries/\(lost.id)", "/v1/diaries/\(lost.id)/entries", "/v1/diaries/\(lost.id)/entries/\(lostEntry.id)"] {
            let clock = ContinuousClock()
            let start = clock.now
            let reply = try await api.call(.get, path, token: bob.accessToken)
            let took = clock.now - start
            #expect(reply.status == .serviceUnavailable && reply.code == "service_unavailable", "\(path): \(reply.status) \(reply.text)")
            #expect(reply.headers[.retryAfter] != nil, "\(path)")
            #expect(took < Self.statementTimeout, "\(path) took \(took)")
        }

        // Writes that reach every node: the same 503, never a 500 or a 504.
        let everyNode: [(String, () async throws -> APIHarness.Reply)] = [
            ("a new account", { try await api.call(.post, "/v1/auth/dev", body: DevSignInRequest(name: "outage-new-\(tag)")) }),
            ("a new diary", { try await api.call(.post, "/v1/diaries", token: alice.accessToken, body: CreateDiaryRequest(name: "新しい", type: .couple)) }),
            ("a rotation", { try await api.call(.post, "/v1/diaries/\(kept.id)/invite-code", token: alice.accessToken) }),
            ("a device", { try await api.call(.put, "/v1/me/devices/\(PushFixture.deviceToken())", token: alice.accessToken, json: #"{"environment":"sandbox"}"#) }),
            ("the profile", { try await api.call(.patch, "/v1/me", token: alice.accessToken, json: #"{"displayName":"改名"}"#) }),
            ("RevenueCat", {
                try await RevenueCatWebhookTests.send(api, try RevenueCatWebhookTests.body("initial_purchase", user: alice.user.id, expiration: Date().addingTimeInterval(3600)))
            }),
        ]
        for (what, write) in everyNode {
            let reply = try await write()
            #expect(reply.status.code < 300 || (reply.status == .serviceUnavailable && reply.headers[.retryAfter] != nil), "\(what): \(reply.status) \(reply.text)")
        }

        // An existing user signs in and refreshes.
        let again = try await api.call(.post, "/v1/auth/dev", body: DevSignInRequest(name: "outage-bob-\(tag)"))
        #expect(again.status == .ok, "sign-in: \(again.status) \(again.text)")
        let refreshed = try await api.call(.post, "/v1/auth/refresh", body: RefreshRequest(refreshToken: alice.refreshToken))
        #expect(refreshed.status == .ok, "refresh: \(refreshed.status) \(refreshed.text)")
        return during
    }
}

/// A TCP port on 127.0.0.1 that completes connections (the kernel's backlog) and never
/// accepts or answers them.
final class SilentListener: Sendable {
    let descriptor: Int32

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw HarnessError("socket() failed") }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(descriptor, 512) == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw HarnessError("cannot listen on 127.0.0.1:\(port): errno \(code)")
        }
    }

    func close() { Glibc.close(descriptor) }
}
