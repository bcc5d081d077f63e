import DiaryModels
import Foundation
import Hummingbird
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// PostgreSQL's row-level security agrees with the Swift policies, keeps identities apart
/// on a shared connection, and turns an identity that cannot be set into 401.
@Suite("Row-level security: the second wall")
struct RowLevelSecurityTests {
    typealias Role = AuthorizationMatrixTests.Role

    enum Verdict: Equatable, CustomStringConvertible {
        case allowed, hidden, forbidden, unexpected(String)

        init(_ status: HTTPResponse.Status) {
            switch status.code {
            case 200..<300: self = .allowed
            case 404: self = .hidden
            case 403: self = .forbidden
            default: self = .unexpected("HTTP \(status.code)")
            }
        }

        var description: String {
            switch self {
            case .allowed: "allowed"
            case .hidden: "hidden"
            case .forbidden: "forbidden"
            case .unexpected(let what): what
            }
        }
    }

    /// The authorization matrix's operations, as SQL the app role runs itself with the
    /// caller's identity set: a row the caller cannot see is `hidden`, a write the
    /// policies refuse (42501, or nothing changed on a visible row) is `forbidden`.
    struct SQLProbe {
        let connection: PostgresConnection
        let world: AuthorizationMatrixTests.World
        let caller: UUID

        var diary: UUID { world.diary.id }
        var entry: UUID { world.ownersEntry }

        func verdict(for operation: String) async throws -> Verdict {
            switch operation {
            case "get diary", "timeline":
                return try await exists("select 1 from diaries where id = \(diary)") ? .allowed : .hidden
            case "rename diary":
                return try await outcome("select rename_diary(\(diary), \("改名")) as outcome")
            case "rotate invite code":
                return try await changes("update diaries set invite_code = generate_invite_code() where id = \(diary) returning 1")
            case "list members":
                return try await exists("select 1 from diary_members where diary_id = \(diary)") ? .allowed : .hidden
            case "remove the owner":
                return try await outcome("select remove_diary_member(\(diary), \(world.ids[.owner]!)) as outcome")
            case "post entry":
                guard try await exists("select 1 from diaries where id = \(diary)") else { return .hidden }
                return try await changes("select 1 where post_entry(\(diary), \(UUID()), \("書く"), null, '{}')")
            case "get entry", "list reads":
                return try await exists("select 1 from entries where diary_id = \(diary) and id = \(entry)") ? .allowed : .hidden
            case "edit entry", "set entry photos", "drop entry photos":
                // set_entry_photos acts only on the caller's own entry, so the edit's verdict is the route's.
                return try await outcome("select edit_entry(\(diary), \(entry), null, null) as outcome")
            case "post with the owner's photo":
                guard try await exists("select 1 from diaries where id = \(diary)") else { return .hidden }
                let id = UUID()
                guard try await exists("select 1 where post_entry(\(diary), \(id), \("盗む"), null, '{}')") else { return .hidden }
                do {
                    try await connection.query("select set_entry_photos(\(diary), \(id), \([world.ownersPhoto]))")
                    return .allowed
                } catch let error as PostgresError where error.sqlState == SQLState("ZN004") {
                    return .hidden
                }
            case "mark read":
                do {
                    try await connection.query("select mark_as_read(\(diary), \(entry), \(caller))")
                    return .allowed
                } catch let error as PostgresError where error.sqlState == SQLState("ZN003") {
                    return .hidden
                }
            case "delete entry":
                return try await outcome("select delete_entry(\(diary), \(entry)) as outcome")
            default:
                return .unexpected("no SQL for \(operation)")
            }
        }

        private func exists(_ query: PostgresQuery) async throws -> Bool {
            try await !connection.query(query).isEmpty
        }

        /// A visible row the statement leaves alone was refused, as was a 42501.
        /// The answer of a function that writes and applies the policies itself.
        private func outcome(_ statement: PostgresQuery) async throws -> Verdict {
            switch try await connection.query(statement).first?.decode("outcome", as: String?.self) {
            case "forbidden": .forbidden
            case "not_found", nil: .hidden
            default: .allowed
            }
        }

        private func changes(_ statement: PostgresQuery) async throws -> Verdict {
            do {
                return try await connection.query(statement).isEmpty ? .hidden : .allowed
            } catch let error as PostgresError where error.sqlState == SQLState("42501") {
                return .forbidden
            }
        }
    }

    /// Runs `operation` as `caller` in a transaction that is rolled back, so it changes nothing.
    static func sqlVerdict(_ operation: String, as caller: UUID, world: AuthorizationMatrixTests.World, pool: PostgresPool) async throws -> Verdict {
        try await pool.withConnection { connection in
            try await connection.query("begin")
            // What authenticate() does, without a session: the identity, then the caller's diaries.
            try await connection.query(Seed.identity(caller))
            try await connection.query("select refresh_app_diary_ids()")
            let verdict: Verdict
            do {
                verdict = try await SQLProbe(connection: connection, world: world, caller: caller).verdict(for: operation)
            } catch {
                verdict = .unexpected("\(error)")
            }
            try await connection.query("rollback")
            return verdict
        }
    }

    @Test("the authorization matrix gives the same answer through HTTP and directly in SQL as diary_app")
    func agreement() async throws {
        try await APIHarness.run { api in
            let world = try await AuthorizationMatrixTests.makeWorld(api)
            var disagreements: [String] = []
            var compared = 0
            for testCase in AuthorizationMatrixTests.cases(world) {
                for role in Role.allCases {
                    guard let expected = testCase.expected[role] else { continue }
                    // Still the diary's row for "delete entry" and "edit entry": SQL first, rolled back.
                    let sql = try await Self.sqlVerdict(testCase.name, as: world.ids[role]!, world: world, pool: api.pool)
                    let http = Verdict(try await api.call(testCase.method, testCase.path, token: world.tokens[role]!, json: testCase.json).status)
                    compared += 1
                    if sql != http || http != Verdict(expected) {
                        disagreements.append("\(testCase.name) as \(role): HTTP \(http), SQL \(sql), table \(Verdict(expected))")
                    }
                }
            }
            #expect(compared >= 40)
            #expect(disagreements.isEmpty, "\(disagreements.joined(separator: "\n"))")
        }
    }

    /// What `entry_verdict` answers, derived from the entries policies themselves: hidden by
    /// entries_update's USING is not_found; visible, but refused by its WITH CHECK or by
    /// entries_delete's USING, is forbidden; else permitted.
    static func verdictByPolicies(usingUpdate: Bool?, checkUpdate: Bool?, usingDelete: Bool?) -> String {
        guard usingUpdate == true else { return "not_found" }
        return checkUpdate == true && usingDelete == true ? "permitted" : "forbidden"
    }

    @Test("entry_verdict, which edit_entry and delete_entry ask, answers what the entries_update and entries_delete policies say, for every role and a missing entry")
    func entryVerdictIsThePolicies() async throws {
        try await APIHarness.run { api in
            let world = try await AuthorizationMatrixTests.makeWorld(api)
            // The policies as the catalog has them, evaluated on the row beneath every policy.
            let policies = try await api.asSuperuser("""
                select policyname, coalesce(qual, 'true') as qual, coalesce(with_check, 'true') as checked from pg_policies
                where schemaname = 'public' and tablename = 'entries' and policyname in ('entries_update', 'entries_delete')
                """)
            var expression: [String: (qual: String, checked: String)] = [:]
            for row in policies {
                expression[try row.decode("policyname", as: String.self)] = (try row.decode("qual"), try row.decode("checked"))
            }
            let update = try #require(expression["entries_update"]), delete = try #require(expression["entries_delete"])
            var compared: [String: Int] = [:]
            for role in Role.allCases {
                let caller = world.ids[role]!
                for entry in [world.ownersEntry, UUID()] {
                    // As edit_entry and delete_entry call it: as the owner, beneath every policy,
                    // with the caller's identity.
                    let answers = try await TestDatabase.withPool(api.database, size: 1) { pool in
                        try await pool.transaction([
                            Seed.identity(caller), "select refresh_app_diary_ids()",
                            "select entry_verdict(\(world.diary.id), \(entry)) as verdict",
                            """
                            select (\(unsafeRaw: update.qual)) as using_update, (\(unsafeRaw: update.checked)) as check_update,
                                (\(unsafeRaw: delete.qual)) as using_delete
                            from entries where diary_id = \(world.diary.id) and id = \(entry)
                            """,
                        ])
                    }
                    let verdict = try answers[2].first?.decode("verdict", as: String.self)
                    let policed = answers[3].first
                    let expected = Self.verdictByPolicies(
                        usingUpdate: try policed?.decode("using_update", as: Bool?.self),
                        checkUpdate: try policed?.decode("check_update", as: Bool?.self),
                        usingDelete: try policed?.decode("using_delete", as: Bool?.self))
                    #expect(verdict == expected, "\(role) on \(entry == world.ownersEntry ? "the owner's entry" : "a missing entry"): entry_verdict \(verdict ?? "nil"), the policies \(expected)")
                    compared[expected, default: 0] += 1
                }
            }
            // Each answer is reached, so the comparison can tell them apart.
            #expect(compared["permitted"] == 1 && (compared["forbidden"] ?? 0) >= 1 && (compared["not_found"] ?? 0) >= 2, "\(compared)")
        }
    }

    /// Through PgBouncer, the one server connection serves every client connection in turn.
    @Test("1,000 alternating requests from two users over one pooled connection: neither sees the other's rows", arguments: DatabaseRoute.allCases)
    func poolIdentity(route: DatabaseRoute) async throws {
        try await APIHarness.run(poolSize: route == .direct ? 1 : 4, route: route) { api in
            var users: [(token: String, diary: UUID, secret: String)] = []
            for name in ["ユーザーA", "ユーザーB"] {
                let session = try await api.signIn(name)
                let diary = try await api.createDiary("\(name)の日記", type: .couple, token: session.accessToken)
                let secret = "\(name)だけの秘密 \(UUID())"
                _ = try await api.post(secret, in: diary.id, token: session.accessToken)
                users.append((session.accessToken, diary.id, secret))
            }
            var leaks = 0
            var served = 0
            for index in 0..<1000 {
                let me = users[index % 2], other = users[(index + 1) % 2]
                let path = index % 4 < 2 ? "/v1/diaries/\(me.diary)/entries" : "/v1/diaries"
                let reply = try await api.call(.get, path, token: me.token)
                if reply.status == .ok { served += 1 }
                if reply.text.contains(other.secret) || reply.text.contains(other.diary.uuidString.lowercased()) { leaks += 1 }
                // The other user's diary stays a 404 on the same connection.
                if index % 100 == 0 {
                    #expect(try await api.call(.get, "/v1/diaries/\(other.diary)/entries", token: me.token).status == .notFound)
                }
            }
            #expect(served == 1000)
            #expect(leaks == 0)
            // Nothing of the last request stays on the connection: no identity, so no rows.
            let after = try #require(try await api.pool.query("""
                select coalesce(current_setting('app.user_id', true), '') as identity,
                       (select count(*) from entries) + (select count(*) from diaries) + (select count(*) from diary_members)
                     + (select count(*) from entry_reads) + (select count(*) from users) + (select count(*) from sessions) as visible
                """).first)
            #expect(try after.decode("identity", as: String.self) == "")
            #expect(try after.decode("visible", as: Int.self) == 0)
        }
    }

    @Test("a request whose user was deleted mid-session is 401, never 500")
    func deletedUser() async throws {
        try await APIHarness.run { api in
            let session = try await api.signIn("消える人")
            #expect(try await api.call(.get, "/v1/me", token: session.accessToken).status == .ok)
            try await api.asSuperuser("select forget_user(\(session.user.id))")
            for path in ["/v1/me", "/v1/diaries", "/v1/questions/today"] {
                let reply = try await api.call(.get, path, token: session.accessToken)
                #expect(reply.status == .unauthorized, "\(path): \(reply.status)")
            }
        }
    }
}
