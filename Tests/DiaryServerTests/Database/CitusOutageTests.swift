import DiaryModels
import Foundation
import HTTPTypes
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP

/// One Citus worker stopped under a running server, and the coordinator restarted under two,
/// run by scripts/test-citus.sh after the cluster suite (CITUS_OUTAGE_DATABASE_URL), which they
/// would otherwise disturb: a diary on the other worker goes on as usual, a diary on the
/// stopped one and every write that must reach every node answer 503 with Retry-After, and
/// nothing acknowledged is lost.
@Suite("A Citus worker's outage", .serialized, .timeLimit(.minutes(5)))
struct CitusOutageTests {
    static let stoppedWorker = "worker2"
    /// Above the 4 s in which the coordinator gives up a worker's connection
    /// (`CitusSchema.workerConnectionTimeoutMilliseconds`), with room for a loaded machine.
    static let statementTimeout = Duration.seconds(8)

    static func owner() throws -> PostgresConfiguration {
        try PostgresConfiguration(url: try TestPlan.setting("CITUS_OUTAGE_DATABASE_URL", plan: "cluster-outage")).as(TestDatabase.ownerRole)
    }

    static func citus(_ command: String, _ node: String = stoppedWorker) async throws {
        let script = ScratchCluster.packageRoot.appendingPathComponent("scripts/citus.sh").path
        let result = try await Spawn.run(script, [command, node])
        try #require(result.status == 0, "scripts/citus.sh \(command) \(node): \(result.output)")
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

    /// The coordinator restarts from this process (`scripts/citus.sh start-node`): it hung in
    /// 3 of 4 runs while the restarted PostgreSQL inherited the servers' sockets, since a
    /// keep-alive connection the server closed stayed open in it (SpawnTests).
    @Test("the coordinator restarted (pg_ctl stop -m fast, then start) while two servers take posts and reads: each request succeeds or answers 503 with Retry-After, nothing acknowledged is lost, both servers recover by themselves, and a socket on each misses no acknowledged post")
    func coordinatorRestarted() async throws {
        try await APIHarness.run(on: try Self.owner(), statementTimeout: Self.statementTimeout, testing: .live, citus: true) { first in
            try await APIHarness.run(on: try Self.owner(), statementTimeout: Self.statementTimeout, testing: .live, sharing: first, citus: true) { second in
                let servers = [first, second]
                let tag = String(UUID().uuidString.prefix(8)).lowercased()
                var clients: [LoadStream.Client] = []
                for index in 0..<3 {
                    let writer = try await first.signIn("restart-w\(index)-\(tag)"), reader = try await first.signIn("restart-r\(index)-\(tag)")
                    let diary = try await first.createDiary("再起動 \(index)", type: .couple, token: writer.accessToken)
                    #expect(try await first.join(diary.inviteCode, token: reader.accessToken).status == .ok)
                    clients.append(LoadStream.Client(token: writer.accessToken, diary: diary.id, reader: reader.accessToken))
                }
                let watched = clients[0]
                let sockets = try servers.map { TestSocket(port: try #require($0.client.port), token: watched.reader) }
                defer { sockets.forEach { $0.close() } }
                for socket in sockets { #expect(try await socket.nextType() == "ready") }

                let stream = LoadStream(servers: servers, clients: clients)
                let (outcomes, restart) = try await stream.run(workers: clients.count) {
                    let began = ContinuousClock.now
                    try await Self.citus("stop-node", "coordinator")
                    try await Self.citus("start-node", "coordinator")
                    return (began: began, accepting: ContinuousClock.now)
                }
                // Each server recovers by itself: its pool reconnects on the next request.
                for server in servers {
                    try await waitUntil("a post through each server after the restart", within: .seconds(30)) {
                        try await server.post("再起動の後", in: watched.diary, token: watched.token).status == .created
                    }
                }
                let failures = outcomes.filter { $0.status.code >= 300 }
                TestDatabase.logger.warning("coordinator restart: both servers answer again")
                print("coordinator restart: \(outcomes.count) requests, \(failures.count) answered 503, the restart took \(restart.accepting - restart.began)")
                #expect(failures.allSatisfy { $0.status == .serviceUnavailable && $0.retryAfter != nil }, "\(Set(failures.map { "\($0.status.code) \($0.code ?? "")" }))")
                #expect(failures.allSatisfy { $0.started + $0.duration >= restart.began }, "a request failed before the restart began")
                try await first.expectKept(outcomes)
                TestDatabase.logger.warning("coordinator restart: acknowledged writes checked")

                // Every acknowledged post of the watched diary reaches both sockets, as events.
                let acknowledged = outcomes.filter { $0.status == .created }.compactMap(\.postedEntry)
                let watchedEntries = Set(try await first.asSuperuser("select id from entries where diary_id = \(watched.diary) and id = any(\(acknowledged))").map { try $0.decode("id", as: UUID.self) })
                #expect(!watchedEntries.isEmpty)
                for socket in sockets {
                    try await waitUntil("every acknowledged post on the socket", within: .seconds(60)) {
                        let created = socket.frames.withLockedValue { $0 }.compactMap { try? PostgresJSONCoding.decoder.decode(ChangeEvent.self, from: Data($0.utf8)) }
                            .filter { $0.type == .entryCreated }.compactMap { event -> UUID? in if case .entry(let entry) = event.data { entry.id } else { nil } }
                        return watchedEntries.isSubset(of: Set(created))
                    }
                    #expect(!socket.frames.withLockedValue { $0 }.contains { $0.contains(#""type":"resync""#) })
                    TestDatabase.logger.warning("coordinator restart: a socket saw every post")
                }
            }
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
