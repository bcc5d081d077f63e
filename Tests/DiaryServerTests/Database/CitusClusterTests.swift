import Foundation
import PostgresClient
import Testing
import DiaryModels
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// The schema on a real Citus cluster: test plan cluster, which `scripts/test-citus.sh` runs
/// (CITUS_DATABASE_URL, the coordinator's database after `migrate --citus`).
/// One test at a time: they share the cluster's database, and a worker one test runs would
/// claim the rows another queues for itself.
@Suite("On a Citus cluster", .serialized)
struct CitusClusterTests {
    static func coordinator() throws -> PostgresConfiguration {
        try PostgresConfiguration(url: try TestPlan.setting("CITUS_DATABASE_URL", plan: "cluster"))
    }

    @Test("every table is laid out as planned: by diary and co-located with diaries, a reference table, or the coordinator's")
    func layout() async throws {
        try await TestDatabase.withPool(try Self.coordinator(), size: 1) { pool in
            let rows = try await pool.query("""
                select p.logicalrelid::text as name, p.partmethod::text as method, p.repmodel::text as model,
                    p.colocationid = (select colocationid from pg_dist_partition where logicalrelid = 'diaries'::regclass) as with_diaries,
                    coalesce(column_to_column_name(p.logicalrelid, p.partkey), '') as column
                from pg_dist_partition p
                """)
            var found: [String: CitusSchema.Placement] = [:]
            for row in rows {
                let name = try row.decode("name", as: String.self)
                switch (try row.decode("method", as: String.self), try row.decode("model", as: String.self)) {
                case ("h", _) where try row.decode("with_diaries", as: Bool.self):
                    found[name] = .byDiary(column: try row.decode("column", as: String.self))
                case ("n", "t"): found[name] = .reference
                case ("n", "s"): found[name] = .coordinator
                default: Issue.record("\(name) is laid out otherwise")
                }
            }
            for (table, placement) in CitusSchema.placements {
                #expect(found[table] == placement, "\(table)")
            }
        }
    }

    /// The coordinator's database as its owner; the harness serves as diary_app.
    static func owner() throws -> PostgresConfiguration {
        try coordinator().as(TestDatabase.ownerRole)
    }

    @Test("a session of the server's role runs with one connection a node, from the database's settings alone: no startup options, which PgBouncer refuses")
    func sessionDefaultsNeedNoOptions() async throws {
        let server = try Self.coordinator().as(TestDatabase.appRole)
        #expect(server.parameters["options"] == nil)
        try await TestDatabase.withPool(server, size: 1) { pool in
            let rows = try await pool.query("select current_setting('citus.multi_shard_modify_mode') as mode")
            #expect(try rows.first?.decode("mode", as: String.self) == "sequential")
        }
    }

    @Test("every route answers through the coordinator, directly and behind PgBouncer in transaction mode: a member reads and writes their diary, a stranger gets 404 and empty lists, never a member's empty answer; delta sync tells every change in the diary's order",
          arguments: DatabaseRoute.allCases)
    func routesThroughTheCoordinator(route: DatabaseRoute) async throws {
        try await APIHarness.run(on: try Self.owner(), route: route, citus: true) { api in
            let tag = UUID().uuidString.prefix(8)
            let alice = try await api.signIn("citus-alice-\(tag)"), bob = try await api.signIn("citus-bob-\(tag)")
            let mallory = try await api.signIn("citus-mallory-\(tag)")
            let diary = try await api.createDiary("分散", type: .family, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            let since = try await ChangeLogTests.cursor(api, diary.id, token: bob.accessToken)
            let photo = try await EntryPhotoTests.upload(api, alice)
            let posted = try await api.call(.post, "/v1/diaries/\(diary.id)/entries", token: alice.accessToken,
                                            body: CreateEntryRequest(content: "シャードの上で", photoIds: [photo.id]))
            #expect(posted.status == .created, "\(posted.text)")
            let entry = try posted.decode(Entry.self)

            // The member's reads: never empty.
            let timeline = try await api.call(.get, "/v1/diaries/\(diary.id)/entries", token: bob.accessToken).decode(EntryPage.self)
            #expect(timeline.entries.map(\.id) == [entry.id], "a member's timeline is never empty")
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/entries/\(entry.id)", token: bob.accessToken).status == .ok)
            #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(entry.id)/read", token: bob.accessToken).status.code < 300)
            let reads = try await api.call(.get, "/v1/diaries/\(diary.id)/entries/\(entry.id)/reads", token: alice.accessToken)
            #expect(reads.status == .ok && reads.text.lowercased().contains(bob.user.id.uuidString.lowercased()), "\(reads.text)")
            let diaries = try await api.call(.get, "/v1/diaries", token: bob.accessToken)
            #expect(diaries.status == .ok && diaries.text.lowercased().contains(diary.id.uuidString.lowercased()))
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/members", token: bob.accessToken).text.contains("citus-alice"))
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/calendar?month=\(Self.month())", token: bob.accessToken).status == .ok)
            #expect(try await api.fetch(entry.photos[0].url).status == .ok)
            #expect(try await api.call(.get, "/v1/me", token: bob.accessToken).status == .ok)
            #expect(try await api.call(.get, "/v1/questions/today", token: bob.accessToken).status == .ok)
            #expect(try await api.call(.get, "/v1/service-status").status == .ok)

            // The member's writes.
            #expect(try await api.call(.patch, "/v1/diaries/\(diary.id)", token: alice.accessToken, json: #"{"name":"改名"}"#).status == .ok)
            #expect(try await api.call(.patch, "/v1/diaries/\(diary.id)/entries/\(entry.id)", token: alice.accessToken, json: #"{"content":"書き直し"}"#).status == .ok)
            #expect(try await api.call(.patch, "/v1/diaries/\(diary.id)/entries/\(entry.id)", token: bob.accessToken, json: #"{"content":"x"}"#).status == .forbidden)
            #expect(try await api.call(.patch, "/v1/me", token: bob.accessToken, json: #"{"timeZone":"Asia/Tokyo","settings":{"notificationReminder":false}}"#).status == .ok)
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/export", token: alice.accessToken).status == .ok)

            // Delta sync: each change once, in the order the diary took them.
            let changes = try await ChangeLogTests.changes(api, diary.id, since: since, token: bob.accessToken, expecting: 4)
            // The photo is attached after the post, in its transaction: an entry.updated.
            #expect(changes.changes.map(\.type) == [.entryCreated, .entryUpdated, .entryRead, .diaryUpdated, .entryUpdated], "\(changes.changes)")
            #expect(try await ChangeLogTests.changes(api, diary.id, since: changes.nextCursor, token: bob.accessToken).changes.isEmpty)
            #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/changes?since=\(since)", token: mallory.accessToken).status == .notFound)

            // The stranger: 404 for the diary's rows, empty lists.
            for path in ["/v1/diaries/\(diary.id)", "/v1/diaries/\(diary.id)/entries", "/v1/diaries/\(diary.id)/entries/\(entry.id)",
                         "/v1/diaries/\(diary.id)/members"] {
                #expect(try await api.call(.get, path, token: mallory.accessToken).status == .notFound, "\(path)")
            }
            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/entries/\(entry.id)", token: mallory.accessToken).status == .notFound)
            #expect(!(try await api.call(.get, "/v1/diaries", token: mallory.accessToken).text.lowercased().contains(diary.id.uuidString.lowercased())))

            // Leaving, deleting and the account's end.
            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/entries/\(entry.id)", token: alice.accessToken).status.code < 300)
            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(bob.user.id)", token: bob.accessToken).status.code < 300)
            #expect(try await api.call(.delete, "/v1/me", token: alice.accessToken).status.code < 300)
            #expect(try await api.call(.get, "/v1/me", token: alice.accessToken).status == .unauthorized)
            let left = try await api.asSuperuser("select count(*)::int8 as n from diaries where id = \(diary.id) and closed_at is not null")
            #expect(try left.first?.decode("n", as: Int.self) == 1, "the last member's account deletion closes the diary, kept for Bob, who left")
            let safety = try await api.call(.get, "/v1/data-safety", token: bob.accessToken).decode(DataSafety.self)
            #expect(safety.departures.map(\.diaryId) == [diary.id] && safety.departures.first?.closedAt != nil)
            #expect(try await api.call(.get, "/v1/me/export", token: bob.accessToken).status == .ok)
            // A round sets its deletion date, unless the server's own worker, woken by the close, did first.
            let round = try await TestDatabase.withPool(api.database.as(TestDatabase.appRole), size: 1) { pool in try await ClosedDiaryTests.worker(pool, api).round() }
            #expect(round.scheduled.isEmpty || round.scheduled == [diary.id])
            #expect(try await ClosedDiaryTests.closedState(api, diary.id).purgeAt != nil)
            let restored = try await api.call(.post, "/v1/diaries/\(diary.id)/restore", token: bob.accessToken)
            #expect(restored.status == .ok, "Bob restores it on the cluster: \(restored.text)")
            // Closed again by Bob's leave, and past its date: the worker purges it on the cluster, history and all.
            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(bob.user.id)", token: bob.accessToken).status.code < 300)
            try await TestDatabase.withPool(api.database.as(TestDatabase.appRole), size: 1) { pool in
                let worker = ClosedDiaryTests.worker(pool, api)
                _ = try await worker.round()
                try await waitUntil("the deletion date is set") { try await ClosedDiaryTests.closedState(api, diary.id).purgeAt != nil }
                try await api.asSuperuser("update diaries set purge_at = now() - interval '1 second' where id = \(diary.id)")
                let purged = try await worker.round().purged
                let exists = try await ClosedDiaryTests.closedState(api, diary.id).exists
                #expect(purged == [diary.id] || !exists, "purged by this round or the server's own")
            }
            #expect(try await ClosedDiaryTests.closedState(api, diary.id).exists == false)
            let leftBehind = try await api.asSuperuser("""
                select (select count(*) from change_log where diary_id = \(diary.id))::int8 + (select count(*) from former_members where diary_id = \(diary.id))::int8
                    + (select count(*) from entries where diary_id = \(diary.id))::int8 as n
                """)
            #expect(try leftBehind.first?.decode("n", as: Int.self) == 0, "a purged diary leaves nothing on the cluster")
            let differences = try await TestDatabase.withPool(try Self.owner(), size: 1) { pool in
                try await CounterReconciliation(pool: pool).differences()
            }
            #expect(differences.isEmpty)
        }
    }

    @Test("the writes Citus refused: a device's registration, an invite code's rotation, a push claim and its settling, a reminder tick, an Apple token kept and revoked, a RevenueCat expiration")
    func writesCitusRefused() async throws {
        try await APIHarness.run(on: try Self.owner(), citus: true) { api in
            let tag = UUID().uuidString.prefix(8)
            let alice = try await api.signIn("citus-writes-alice-\(tag)"), bob = try await api.signIn("citus-writes-bob-\(tag)")
            let diary = try await api.createDiary("書き込み", type: .family, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            // Devices are one table for every test on this cluster: a token of this run's own.
            let device = (UUID().uuidString + UUID().uuidString).replacingOccurrences(of: "-", with: "").lowercased()
            for _ in 0..<2 {
                // The second registration of the same token takes the DO UPDATE path.
                let registered = try await api.call(.put, "/v1/me/devices/\(device)", token: bob.accessToken, body: RegisterDeviceRequest(environment: "sandbox"))
                #expect(registered.status.code < 300, "\(registered.text)")
            }
            let rotated = try await api.call(.post, "/v1/diaries/\(diary.id)/invite-code", token: alice.accessToken)
            #expect(rotated.status == .ok, "\(rotated.text)")
            #expect(try await api.post("通知", in: diary.id, token: alice.accessToken).status == .created)
            try await TestDatabase.withPool(try Self.owner(), size: 1) { pool in
                let claimed = try await pool.query("select id, device_token from claim_push_batch(1000, interval '1 minute')")
                let notification = try #require(try claimed.first { try $0.decode("device_token", as: String.self) == device }?.decode("id", as: Int.self),
                                                "bob's notification is claimed")
                // Settled as a retry, then as dead: the outcomes that update the outbox.
                for outcome in ["retry", "dead"] {
                    try await pool.query("select finish_push_batch(array[\(notification)::int8], array[\(outcome)], array[0], array['stand-in'])")
                }
                let dead = try await pool.query("select dead_at is not null as dead from push_outbox where id = \(notification)")
                #expect(try dead.first?.decode("dead", as: Bool.self) == true)
                _ = try await pool.query("select * from run_reminders(now(), 1000)")
                let sealed = Data(repeating: 7, count: 40)
                _ = try await pool.transaction([Seed.identity(bob.user.id), "select store_apple_token(\(UUID()), 'com.example.diary', \(sealed))"])
                let kept = try await pool.query("select count(*)::int8 as n from apple_tokens where user_id = \(bob.user.id)")
                #expect(try kept.first?.decode("n", as: Int.self) == 1)
                try await pool.query("update users set premium_expires_at = now() + interval '30 days' where id = \(bob.user.id)")
                let outcome = try await pool.query("""
                    select record_billing_event(\("citus-\(tag)"), 'EXPIRATION', \([bob.user.id.uuidString.lowercased()]), '{}', '{}',
                        'premium_monthly', false, null, now(), 'SANDBOX', true, '{}') as outcome
                    """)
                #expect(try outcome.first?.decode("outcome", as: String.self) == "applied")
                let expired = try await pool.query("select premium_expires_at <= now() as expired from users where id = \(bob.user.id)")
                #expect(try expired.first?.decode("expired", as: Bool.self) == true)
            }
            // Bob's account deleted: his Apple token is queued for revocation, claimed, and settled as a retry.
            #expect(try await api.call(.delete, "/v1/me", token: bob.accessToken).status.code < 300)
            try await TestDatabase.withPool(try Self.owner(), size: 1) { pool in
                let claimed = try await pool.query("select token_id from claim_apple_revocations(1000, interval '1 minute')")
                #expect(!claimed.isEmpty, "the deleted account's token is queued")
                for row in claimed {
                    let token = try row.decode("token_id", as: UUID.self)
                    let state = try await pool.query("select finish_apple_revocation(\(token), 'retry', 0, 'stand-in') as state")
                    #expect(try state.first?.decode("state", as: String?.self) == "pending")
                    // Settled for good, so that no revocation worker of a later test claims it.
                    let failed = try await pool.query("select finish_apple_revocation(\(token), 'failed', 0, 'stand-in') as state")
                    #expect(try failed.first?.decode("state", as: String?.self) == "failed")
                }
            }
        }
    }

    @Test("the diaries list, read a diary at a time on the cluster, comes in the order one PostgreSQL's SQL gives it")
    func listOrderThroughTheCoordinator() async throws {
        try await APIHarness.run(on: try Self.owner(), citus: true) { api in
            try await DiaryListTests.listsLatestWrittenFirst(api, name: "lister-\(UUID().uuidString.prefix(8))")
        }
    }

    @Test("premium through the coordinator: every RevenueCat event type sets or keeps the plan through the webhook, each recorded")
    func premiumThroughTheCoordinator() async throws {
        try await APIHarness.run(on: try Self.owner(), citus: true) { api in
            try await RevenueCatWebhookTests.eventTypesSetThePlan(api, name: "premium-\(UUID().uuidString.prefix(8))")
        }
    }

    @Test("every background worker through the coordinator: push delivery to the APNs stand-in, the reminder scheduler's ticks, the photo sweeper, and the Apple revocation worker with Apple's stand-in")
    func workersThroughTheCoordinator() async throws {
        let tag = String(UUID().uuidString.prefix(8)).lowercased()
        let push = try await PushFixture.start()
        defer { Task { try? await push.standIn.shutdown() } }
        try await APIHarness.run(on: try Self.owner(), push: PushConfiguration(apns: push.apns), pushDelivery: PushFixture.quickOptions, citus: true) { api in
            try await PushDeliveryTests.newEntryReachesOtherMembers(api, push, names: ("push-alice-\(tag)", "push-bob-\(tag)"))
        }
        // Without a delivery worker, which would send the reminders the test counts.
        try await APIHarness.run(on: try Self.owner(), citus: true) { api in
            try await ReminderTests.firesOnTimeOncePerDay(api, tag: "-\(tag)")
            try await EntryPhotoTests.sweeperCollects(api, name: "sweeper-\(tag)")
        }
        try await AppleFixture.run(on: try Self.owner(), citus: true) { apple in
            try await AppleLifecycleTests.deletionRevokes(apple, subject: "citus-apple-\(tag)")
        }
    }

    @Test("realtime through the coordinator: a socket learns of its user's join from elsewhere, the other member's post, and its own departure")
    func realtimeThroughTheCoordinator() async throws {
        try await APIHarness.run(on: try Self.owner(), testing: .live, citus: true) { api in
            try await RealtimeTests.ownJoinPostAndDeparture(api, port: try #require(api.client.port))
        }
    }

    @Test("the fan-out's property on the cluster: each socket's events are its user's delta sync, whatever the interleaving (make test's seeds)", arguments: FanOutPropertyTests.seeds)
    func fanOutPropertyOnTheCluster(_ seed: UInt64) async throws {
        try await APIHarness.run(on: try Self.owner(), testing: .live, citus: true) { api in
            try await FanOutPropertyTests.check(seed: seed, api, port: try #require(api.client.port), tag: "-citus-\(UUID().uuidString.prefix(8))")
        }
    }

    @Test("200 simultaneous joins to a couple diary keep the cap on the cluster, and check-counters finds no difference")
    func joinsKeepTheCap() async throws {
        let (members, outcomes) = try await JoinDiaryTests.raceJoins(function: "join_diary", type: "couple", joiners: 200, configuration: try Self.owner())
        #expect(members == 2)
        #expect(outcomes.filter { $0 == .full }.count == 199, "\(outcomes.filter { $0 != .full && $0 != .joined }.prefix(3))")
        let differences = try await TestDatabase.withPool(try Self.owner(), size: 1) { pool in
            try await CounterReconciliation(pool: pool).differences()
        }
        #expect(differences.isEmpty)
    }

    @Test("joins and creates racing at a user's 100-diary cap keep it on the cluster: exactly 100, the rest 409 too_many_diaries")
    func diaryCapUnderRace() async throws {
        try await APIHarness.run(on: try Self.owner(), citus: true) { api in try await JoinDiaryTests.raceToTheDiaryCap(api) }
    }

    @Test("a join on the cluster answers the diary join_diary names, read in the join's transaction as the joiner sees it: aliases in an anonymous diary")
    func joinAnswersAsTheJoinerSees() async throws {
        try await APIHarness.run(on: try Self.owner(), citus: true) { api in try await JoinDiaryTests.anonymousJoinAnswersAliases(api) }
    }

    @Test("migrate --citus and rebalance check on every node that the owner may take diary_app's role, and that the coordinator holds no shard")
    func readBackPrerequisites() async throws {
        try await TestDatabase.withPool(try Self.owner(), size: 1) { pool in
            let schema = CitusSchema(pool: pool, logger: TestDatabase.logger)
            #expect(try await schema.isMemberOnEveryNode("diary_owner", of: "diary_app"))
            #expect(try await schema.isMemberOnEveryNode("diary_app", of: "diary_owner") == false)
            try await schema.checkCluster()
        }
    }

    @Test("every write that answers with what it wrote does so from its own transaction on the cluster, read as the caller in the connection that wrote the diary's shard")
    func writesAnswerFromTheirTransaction() async throws {
        try await APIHarness.run(on: try Self.owner(), citus: true) { api in try await ReadBackTests.everyWriteAnswersFromItsTransaction(api, citus: true) }
    }

    @Test("the routers of a write's answer read through the caller's policies on the workers: a stranger gets no diary and no entry, and the owner's connection is the owner's again after")
    func readBackRoutersReadAsTheCaller() async throws {
        try await APIHarness.run(on: try Self.owner(), citus: true) { api in
            let tag = UUID().uuidString.prefix(8)
            let alice = try await api.signIn("citus-router-alice-\(tag)"), mallory = try await api.signIn("citus-router-mallory-\(tag)")
            let diary = try await api.createDiary("経路", type: .family, token: alice.accessToken)
            let entry = try await api.post("見せない", in: diary.id, token: alice.accessToken).decode(Entry.self)
            let scope = try await ReadBackTests.scope(api, mallory, database: .citus)
            let results = try await scope.run(["select rename_diary(\(diary.id), 'x') as outcome"], thenRead: [
                DiaryRepository.readBack("\(diary.id)"), EntryRepository.readBack(entry.id, in: diary.id),
            ])
            #expect(try results[0].first?.decode("outcome", as: String.self) == "not_found")
            #expect(results[1].isEmpty && results[2].isEmpty, "a stranger reads nothing through the routers")
            // The owner writes after the routers ran in its connection, in the same transaction.
            let owner = try await ReadBackTests.scope(api, alice, database: .citus)
            let after = try await owner.run(["select rename_diary(\(diary.id), '経路2') as outcome"], thenRead: [
                DiaryRepository.readBack("\(diary.id)"),
            ])
            #expect(try after[1].first?.decode("name", as: String.self) == "経路2")
            let edited = try await owner.run([
                "select edit_entry(\(diary.id), \(entry.id), '見せた', null) as outcome",
                "select * from read_back_entry(\(diary.id), \(entry.id))",
                "select post_entry(\(diary.id), \(UUID()), 'その後で', null, '{}') as posted",
                "select count(*)::int8 as n from read_back_entry(\(diary.id), \(entry.id))",
            ])
            #expect(try edited[1].first?.decode("content", as: String.self) == "見せた")
            #expect(try edited[2].first?.decode("posted", as: Bool.self) == true, "the owner's connection writes again after the router took the caller's role")
            #expect(try edited[3].first?.decode("n", as: Int.self) == 1)
        }
    }

    @Test("every everyday read, as the server spells it on a cluster, routes to the diary's one shard in one piece: the home list's diary, a diary, the timeline's first, later and day pages, an entry, mark read's check, the socket's and the fan-out's reads of the log")
    func everydayReadsRouteToOneShard() async throws {
        try await APIHarness.run(on: try Self.owner(), citus: true) { api in
            let alice = try await api.signIn("citus-plan-\(UUID().uuidString.prefix(8))")
            let diary = try await api.createDiary("計画", type: .couple, token: alice.accessToken)
            let entry = try await api.post("一つ", in: diary.id, token: alice.accessToken).decode(Entry.self)
            _ = try await api.post("二つ", in: diary.id, token: alice.accessToken)
            let cursor = EntryRepository.Cursor(createdAt: PostgresTimestamp.format(entry.createdAt), id: entry.id)
            let today = try #require(EntryRepository.Day(String(PostgresTimestamp.format(entry.createdAt).prefix(10))))
            let listed: PostgresQuery = "\(DiaryRepository.diaryColumns(ofDiary: diary.id)) where diaries.id = \(diary.id) and \(DiariesPolicy.select.using)"
            var reads: [(name: String, statement: PostgresQuery)] = [("the home list's diary", listed)]
            // The statements but the planner setting, which reads nothing.
            func timeline(_ statements: [PostgresQuery]) -> [PostgresQuery] { statements.filter { $0.sql != EntryRepository.walkTheTimeline.sql } }
            reads += timeline(DiaryRepository.findStatements(diary.id)).map { ("a diary", $0) }
            reads += timeline(EntryRepository.timelineStatements(of: diary.id, limit: 20, before: nil)).map { ("the first page", $0) }
            reads += timeline(EntryRepository.timelineStatements(of: diary.id, limit: 5, before: cursor)).map { ("a later page", $0) }
            reads += timeline(EntryRepository.timelineStatements(of: diary.id, limit: 20, before: nil, on: today)).map { ("a day's page", $0) }
            reads.append(("an entry", EntryRepository.findStatement(entry.id, in: diary.id)))
            reads.append(("mark read's check", EntryRepository.markReadStatements(entry.id, in: diary.id)[0]))
            reads.append(("the socket's read", ChangeLogRepository.changesStatement(inDiary: diary.id, after: 0, limit: 100, on: .citus)))
            reads.append(("the fan-out's read", ChangeLogRepository.changesStatement(inDiary: diary.id, after: 0, limit: 100, subjects: .entries, on: .citus)))
            for read in reads {
                // Spelled as a request on the cluster sends it (RequestScope.Database.citus).
                let explain = CitusSpelling.respelled(PostgresQuery(unsafeSQL: "explain (costs off) " + read.statement.sql, bindings: read.statement.bindings))
                let plan = try await api.pool.transaction([Seed.identity(alice.user.id), "select refresh_app_diary_ids()", explain])[2]
                    .map { try $0.decode("QUERY PLAN", as: String.self) }.joined(separator: "\n")
                #expect(plan.contains("Task Count: 1"), "\(read.name): \(plan)")
                // Not planned in pieces whose results go to every node, nor run on every shard: a
                // subquery correlated on entries.diary_id did both (Benchmarks/results/citus-timeline-probe-20261126.txt).
                #expect(!plan.contains("Distributed Subplan") && !plan.contains("Task Count: 32"), "\(read.name): \(plan)")
            }
        }
    }

    @Test("profile photos and the invite page through the coordinator: set, minted everywhere, replaced, removed, deleted with the account; a current code's page, a rotated one's")
    func profilePhotosAndInvitePages() async throws {
        let tag = "-\(UUID().uuidString.prefix(8).lowercased())"
        try await APIHarness.run(on: try Self.owner(), citus: true, invitePage: InvitePageTests.app) { api in
            try await ProfilePhotoTests.mintedEverywhere(api, tag: tag)
            try await ProfilePhotoTests.replacedRemovedDeleted(api, tag: tag + "-r")
            try await InvitePageTests.invalidCodes(api, tag: tag)
        }
    }

    @Test("backup refuses a Citus coordinator, whose pg_dump would hold none of the workers' rows, before it writes anything")
    func backupRefused() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("citus-backup-\(UUID().uuidString)").path
        try await TestDatabase.withPool(try Self.owner(), size: 1) { pool in
            let runner = BackupRunner(
                pool: pool, store: try FolderPhotoStore(root: directory + "-photos"), pgDump: ExternalTool(name: "pg_dump", path: "/usr/bin/pg_dump"),
                logger: TestDatabase.logger
            )
            await #expect(throws: BackupRunner.OnCitusCluster.self) { try await runner.backup(into: directory) }
        }
        #expect(!FileManager.default.fileExists(atPath: directory))
    }

    static func month() -> String {
        let parts = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "Asia/Tokyo")!, from: Date())
        return String(format: "%04d-%02d", parts.year!, parts.month!)
    }

    @Test("rebalance: refused as the owner, saying it needs a superuser; as one, every node's Citus subscription role that is a member of a BYPASSRLS owner gets BYPASSRLS, and no other role: not one named otherwise, one of no such owner, or one still SUPERUSER")
    func rebalanceLetsOnlySubscriptionRolesApply() async throws {
        let refused = try await ServerProcess.runCommand(["rebalance", "--database-url", try TestPlan.setting("CITUS_DATABASE_URL", plan: "cluster")])
        #expect(refused.status != 0 && refused.output.contains("superuser"), "\(refused.output)")

        let tag = String(UUID().uuidString.prefix(8)).lowercased()
        let moving = "citus_shard_move_subscription_role_\(tag)", ownerless = "citus_shard_move_subscription_role_free_\(tag)"
        let stillSuper = "citus_shard_split_subscription_role_super_\(tag)", otherName = "mover_\(tag)"
        let roles = [(moving, "in role diary_owner"), (ownerless, ""), (stillSuper, "superuser nobypassrls in role diary_owner"), (otherName, "in role diary_owner")]
        let creates = roles.map { "create role \($0.0) nologin \($0.1);" }.joined(separator: " ")
        let drops = roles.map { "drop role if exists \($0.0);" }.joined(separator: " ")
        func onEveryNode(_ pool: PostgresPool, _ statements: String) async throws {
            let failures = try await pool.query(PostgresQuery(unsafeSQL: """
                select result from run_command_on_all_nodes($command$
                    do $roles$ begin perform set_config('citus.enable_ddl_propagation', 'off', true); \(statements) end $roles$
                    $command$) where not success
                """))
            let messages = try failures.map { try $0.decode("result", as: String.self) }
            #expect(messages.isEmpty, "\(messages)")
        }
        try await TestDatabase.withPool(try Self.coordinator().as("postgres"), size: 1) { pool in
            try await onEveryNode(pool, creates)
            let nodes = try #require(try await pool.query("select count(*)::int8 as n from pg_dist_node where isactive").first?.decode("n", as: Int.self))
            try await CitusRebalance(pool: pool, logger: TestDatabase.logger).letSubscriptionRolesApply()
            let bypassing = try await pool.query(PostgresQuery(unsafeSQL: """
                select result from run_command_on_all_nodes($command$
                    select string_agg(rolname, ',' order by rolname) from pg_roles where rolbypassrls and rolname like '%\(tag)'
                    $command$)
                """)).map { try $0.decode("result", as: String.self) }
            try await onEveryNode(pool, drops)
            #expect(bypassing == Array(repeating: moving, count: nodes))
        }
    }

    @Test("serve's scheduled restore point on the cluster: citus_create_restore_point, the point in every node's WAL, recorded on the coordinator for the Data Safety Center")
    func scheduledRestorePoint() async throws {
        try await TestDatabase.withPool(try Self.coordinator().as("postgres"), size: 2) { pool in
            let before = try await pool.query("select nodeid::int8 as node, result from run_command_on_all_nodes('select pg_current_wal_insert_lsn()::text')")
            let now = Date()
            var schedule = BackupSchedule()
            schedule.interval = .zero
            let outcome = await RestorePointScheduler(pool: pool, schedule: schedule, logger: TestDatabase.logger).tick(at: now)
            #expect(outcome == .taken(name: RestorePoint.defaultName(at: now)))
            let recorded = try await pool.query("select count(*)::int8 as n from backup_runs where location = \("restore-point:" + RestorePoint.defaultName(at: now))")
            #expect(try recorded.first?.decode("n", as: Int.self) == 1)
            // Every node wrote the point to its WAL.
            for row in before {
                let node = try row.decode("node", as: Int.self), lsn = try row.decode("result", as: String.self)
                let moved = try await pool.query("""
                    select result from run_command_on_all_nodes('select pg_current_wal_insert_lsn() > ' || quote_literal(\(lsn)) || '::pg_lsn') where nodeid = \(node)
                    """)
                #expect(try moved.first?.decode("result", as: String.self) == "t", "node \(node)")
            }
        }
    }
}
