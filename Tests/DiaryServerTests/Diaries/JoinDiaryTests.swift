import DiaryModels
import Foundation
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// Holds every task at one point until all have arrived, so their work starts together.
actor StartingLine {
    private let expected: Int
    private var arrived = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(expected: Int) { self.expected = expected }

    func arriveAndWait() async {
        arrived += 1
        if arrived == expected {
            waiting.forEach { $0.resume() }
            waiting.removeAll()
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }
}

@Suite("join_diary and mark_as_read", .serialized)
struct JoinDiaryTests {
    enum Outcome: Equatable { case joined, full, other(String) }

    /// Fires `joiners` joins at once, each on its own connection, through `function`.
    static func raceJoins(function: String, type: String, joiners: Int, configuration: PostgresConfiguration) async throws -> (members: Int, outcomes: [Outcome]) {
        try await TestDatabase.withPool(configuration, size: joiners, acquireTimeout: .seconds(60)) { pool in
            let users = try await Seed.users(joiners + 1, in: pool)
            let diary = try await Seed.diary(type: type, owner: users[0], in: pool)
            let line = StartingLine(expected: joiners)
            let outcomes = try await withThrowingTaskGroup(of: Outcome.self) { group in
                for user in users.dropFirst() {
                    group.addTask {
                        try await pool.withConnection { connection in
                            try await connection.query("select 1")
                            await line.arriveAndWait()
                            do {
                                _ = try await connection.transaction([
                                    Seed.identity(user),
                                    "select \(unsafeRaw: function)(\(diary.inviteCode), \(user))",
                                ])
                                return .joined
                            } catch let error as PostgresError where error.sqlState == SQLState("ZN002") {
                                return .full
                            } catch {
                                return .other("\(error)")
                            }
                        }
                    }
                }
                return try await group.reduce(into: [Outcome]()) { $0.append($1) }
            }
            return (try await Seed.memberCount(diary.id, in: pool), outcomes)
        }
    }

    @Test("200 simultaneous joins to a couple diary: exactly 2 members, the rest 'diary full'", arguments: [("couple", 2), ("anonymous", 2), ("family", 10), ("friends", 10)])
    func joinsRespectTheCap(type: String, cap: Int) async throws {
        try await MigratedTemplate.withDatabase { configuration in
            let joiners = type == "couple" || type == "family" ? 200 : 50
            let (members, outcomes) = try await Self.raceJoins(function: "join_diary", type: type, joiners: joiners, configuration: configuration)
            #expect(members == cap)
            #expect(outcomes.filter { $0 == .joined }.count == cap - 1)
            #expect(outcomes.filter { $0 == .full }.count == joiners - (cap - 1))
            #expect(outcomes.filter { if case .other = $0 { true } else { false } }.isEmpty, "\(outcomes.filter { $0 != .joined && $0 != .full }.prefix(3))")
        }
    }

    @Test("the spec's count-then-insert join_diary overruns the cap under the same race")
    func specVersionOverrunsCap() async throws {
        try await MigratedTemplate.withDatabase { configuration in
            let fixture = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fixtures/spec_join_diary.sql"), encoding: .utf8)
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                try await pool.withConnection { try await $0.runScript(unsafeSQL: fixture) }
            }
            let (members, _) = try await Self.raceJoins(function: "spec_join_diary", type: "couple", joiners: 50, configuration: configuration)
            #expect(members > 2, "the unlocked version kept the cap, so this test no longer shows the race")
        }
    }

    @Test("a join that finds the caller joined by a concurrent request since its transaction began still sees the diary")
    func repeatedJoinSeesTheDiary() async throws {
        try await MigratedTemplate.withDatabase { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { admin in
                let users = try await Seed.users(2, in: admin)
                let diary = try await Seed.diary(type: "family", owner: users[0], in: admin)
                // As the server: the app role, under RLS. The first request reads its visible
                // diaries (none) as authenticate() does, then the second joins and commits.
                try await TestDatabase.withPool(configuration.as(TestDatabase.appRole), size: 2) { pool in
                    try await pool.withConnection { first in
                        try await first.query("begin")
                        try await first.query(Seed.identity(users[1]))
                        try await first.query("select refresh_app_diary_ids()")
                        _ = try await pool.transaction([Seed.identity(users[1]), "select join_diary(\(diary.inviteCode), \(users[1]))"])
                        let joined = try await first.query("select join_diary(\(diary.inviteCode), \(users[1])) as id")
                        #expect(try joined.first?.decode("id", as: UUID.self) == diary.id)
                        let visible = try await first.query("select id from diaries where id = \(diary.id)")
                        try await first.query("commit")
                        #expect(visible.count == 1, "the diary the caller is a member of is invisible to the rest of the join's transaction")
                    }
                }
                #expect(try await Seed.memberCount(diary.id, in: admin) == 2)
            }
        }
    }

    @Test("20 simultaneous joins by one user with one code: every answer is 200 with the diary, one member more")
    func simultaneousRepeatedJoins() async throws {
        try await APIHarness.run(poolSize: 20) { api in
            let owner = try await api.signIn("aiko"), joiner = try await api.signIn("ben")
            for round in 0..<5 {
                let diary = try await api.createDiary("家族 \(round)", type: .family, token: owner.accessToken)
                let line = StartingLine(expected: 20)
                let statuses = try await withThrowingTaskGroup(of: String.self) { group in
                    for _ in 0..<20 {
                        group.addTask {
                            await line.arriveAndWait()
                            let reply = try await api.join(diary.inviteCode, token: joiner.accessToken)
                            return reply.status == .ok ? "200" : "\(reply.status.code) \(reply.code ?? reply.text)"
                        }
                    }
                    return try await group.reduce(into: [String]()) { $0.append($1) }
                }
                #expect(statuses.allSatisfy { $0 == "200" }, "round \(round): \(statuses.filter { $0 != "200" })")
                let members = try await api.call(.get, "/v1/diaries/\(diary.id)/members", token: owner.accessToken)
                #expect(try members.decode(MemberList.self).members.count == 2)
            }
        }
    }

    @Test("a user in 100 diaries can join or create no other: 409 too_many_diaries; after leaving one, they can")
    func diariesPerUserCap() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("many"), bob = try await api.signIn("inviter")
            try await api.asSuperuser("select create_diary_as(\(alice.user.id), gen_random_uuid(), 'd' || n, 'friends') from generate_series(1, 100) n")
            let open = try await api.createDiary("101番目", type: .friends, token: bob.accessToken)
            let joined = try await api.join(open.inviteCode, token: alice.accessToken)
            #expect(joined.status == .conflict && joined.code == "too_many_diaries", "\(joined.text)")
            try await api.asSuperuser("update users set premium_expires_at = now() + interval '1 day' where id = \(alice.user.id)")
            let created = try await api.call(.post, "/v1/diaries", token: alice.accessToken, body: CreateDiaryRequest(name: "もう一つ", type: .couple))
            #expect(created.status == .conflict && created.code == "too_many_diaries", "\(created.text)")

            let one = try #require(try await api.asSuperuser("select diary_id from user_diaries where user_id = \(alice.user.id) limit 1").first?.decode("diary_id", as: UUID.self))
            #expect(try await api.call(.delete, "/v1/diaries/\(one)/members/\(alice.user.id)", token: alice.accessToken).status == .noContent)
            #expect(try await api.join(open.inviteCode, token: alice.accessToken).status == .ok)
        }
    }

    @Test("joins and creates racing at the 100-diary cap: exactly 100, the rest 409 too_many_diaries")
    func diariesPerUserCapUnderRace() async throws {
        try await APIHarness.run { api in try await Self.raceToTheDiaryCap(api) }
    }

    /// A premium user at 95 diaries joins ten diaries and creates ten at once: exactly five
    /// succeed. Also run on the cluster (CitusClusterTests).
    static func raceToTheDiaryCap(_ api: APIHarness) async throws {
        let tag = UUID().uuidString.prefix(8)
        let alice = try await api.signIn("racing-\(tag)"), bob = try await api.signIn("inviter-\(tag)")
        try await api.asSuperuser("select create_diary_as(\(alice.user.id), gen_random_uuid(), 'd' || n, 'friends') from generate_series(1, 95) n")
        try await api.asSuperuser("update users set premium_expires_at = now() + interval '1 day' where id = \(alice.user.id)")
        var codes: [String] = []
        for index in 0..<10 { codes.append(try await api.createDiary("開いた \(index)", type: .friends, token: bob.accessToken).inviteCode) }
        let statuses = try await withThrowingTaskGroup(of: (Int, String?).self) { group in
            for code in codes {
                group.addTask { let reply = try await api.join(code, token: alice.accessToken); return (Int(reply.status.code), reply.code) }
                group.addTask {
                    let reply = try await api.call(.post, "/v1/diaries", token: alice.accessToken, body: CreateDiaryRequest(name: "競争", type: .friends))
                    return (Int(reply.status.code), reply.code)
                }
            }
            return try await group.reduce(into: [(Int, String?)]()) { $0.append($1) }
        }
        let count = try #require(try await api.asSuperuser("select count(*)::int8 as n from user_diaries where user_id = \(alice.user.id)").first?.decode("n", as: Int.self))
        #expect(count == 100)
        #expect(statuses.filter { $0.0 < 300 }.count == 5, "\(statuses)")
        #expect(statuses.filter { $0.0 >= 300 }.allSatisfy { $0.0 == 409 && $0.1 == "too_many_diaries" }, "\(statuses)")
    }

    @Test("a join answers the diary join_diary names, as the joiner sees it: in an anonymous diary the others are aliases, the joiner is themself")
    func joinAnswersAsTheJoinerSees() async throws {
        try await APIHarness.run { api in try await Self.anonymousJoinAnswersAliases(api) }
    }

    /// Also run on the cluster (CitusClusterTests), where the answer is read in the join's
    /// transaction through `read_back_diary`.
    static func anonymousJoinAnswersAliases(_ api: APIHarness) async throws {
        let tag = UUID().uuidString.prefix(8)
        let alice = try await api.signIn("alias-owner-\(tag)"), bob = try await api.signIn("alias-joiner-\(tag)")
        let diary = try await api.createDiary("秘密の日記", type: .anonymous, token: alice.accessToken)
        let typed = diary.inviteCode.lowercased().prefix(5) + "-" + diary.inviteCode.lowercased().dropFirst(5)
        for _ in 0..<2 {
            let reply = try await api.join(String(typed), token: bob.accessToken)
            #expect(reply.status == .ok, "\(reply.text)")
            let joined = try reply.decode(Diary.self)
            #expect(joined.id == diary.id && joined.name == "秘密の日記" && joined.type == .anonymous && joined.role == .member)
            #expect(joined.memberCount == 2 && joined.members.count == 2)
            let me = try #require(joined.members.first { $0.userId == bob.user.id })
            #expect(me.displayName == bob.user.displayName && me.role == .member)
            let other = try #require(joined.members.first { $0.userId != bob.user.id })
            #expect(other.userId != alice.user.id && other.displayName == "匿名1" && other.profileImageUrl == nil && other.role == .owner)
            #expect(!reply.text.contains(alice.user.id.uuidString.lowercased()) && !reply.text.contains(alice.user.displayName))
        }
    }

    @Test("joining twice is a no-op returning the diary; codes match in any case and with hyphens; unknown codes are their own error")
    func joinSemantics() async throws {
        try await MigratedTemplate.withDatabase { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                let users = try await Seed.users(2, in: pool)
                let diary = try await Seed.diary(type: "family", owner: users[0], in: pool)
                let messy = diary.inviteCode.lowercased().prefix(5) + "-" + diary.inviteCode.lowercased().dropFirst(5)
                for code in [String(messy), diary.inviteCode, " \(diary.inviteCode) "] {
                    let row = try #require(try await Seed.asCaller(users[1], "select join_diary(\(code), \(users[1])) as id", in: pool).first)
                    #expect(try row.decode("id", as: UUID.self) == diary.id)
                }
                let value6 = try await Seed.memberCount(diary.id, in: pool)
                #expect(value6 == 2)
                let ownerAgain = try #require(try await Seed.asCaller(users[0], "select join_diary(\(diary.inviteCode), \(users[0])) as id", in: pool).first)
                #expect(try ownerAgain.decode("id", as: UUID.self) == diary.id)
                let unknown = await #expect(throws: PostgresError.self) {
                    try await Seed.asCaller(users[1], "select join_diary(\("ZZZZZZZZZZ"), \(users[1]))", in: pool)
                }
                #expect(unknown?.sqlState == SQLState("ZN001"))
                // It runs as the schema's owner, so it joins nobody but the caller.
                let forSomeoneElse = await #expect(throws: PostgresError.self) {
                    try await Seed.asCaller(users[0], "select join_diary(\(diary.inviteCode), \(users[1]))", in: pool)
                }
                #expect(forSomeoneElse?.sqlState == SQLState("42501"))
                let nobody = await #expect(throws: PostgresError.self) {
                    try await pool.query("select join_diary(\(diary.inviteCode), \(users[1]))")
                }
                #expect(nobody?.sqlState == SQLState("42501"))
            }
        }
    }

    @Test("mark_as_read upserts for members and refuses everyone else")
    func markAsRead() async throws {
        try await MigratedTemplate.withDatabase { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                let users = try await Seed.users(3, in: pool)
                let diary = try await Seed.diary(type: "couple", owner: users[0], in: pool)
                _ = try await Seed.asCaller(users[1], "select join_diary(\(diary.inviteCode), \(users[1]))", in: pool)
                let entryID = UUID()
                try await pool.query("select post_entry_as(\(users[0]), \(diary.id), \(entryID), \("今日は晴れ"))")
                let first = try #require(try await pool.query("select mark_as_read_as(\(users[1]), \(diary.id), \(entryID)) as at").first).decode("at", as: Date.self)
                let second = try #require(try await pool.query("select mark_as_read_as(\(users[1]), \(diary.id), \(entryID)) as at").first).decode("at", as: Date.self)
                #expect(second >= first)
                let reads = try await pool.query("select user_id from entry_reads where entry_id = \(entryID)")
                #expect(reads.count == 1)
                let outsider = await #expect(throws: PostgresError.self) {
                    try await pool.query("select mark_as_read_as(\(users[2]), \(diary.id), \(entryID))")
                }
                #expect(outsider?.sqlState == SQLState("ZN003"))
            }
        }
    }
}
