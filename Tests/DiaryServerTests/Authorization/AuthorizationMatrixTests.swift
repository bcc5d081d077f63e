import DiaryModels
import Foundation
import Hummingbird
import PostgresClient
import Testing
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// Every diary route, called as owner, member, non-member and ex-member: the status
/// must be the one in the table, and nobody outside the diary may see anything of it.
@Suite("Authorization matrix")
struct AuthorizationMatrixTests {
    enum Role: String, CaseIterable { case owner, member, outsider, exMember }

    struct World {
        var tokens: [Role: String]
        var ids: [Role: UUID]
        var diary: Diary
        var ownersEntry: UUID
        var ownersPhoto: UUID
        /// Strings that identify the diary; none may reach an outsider or ex-member.
        var secrets: [String]
    }

    static func makeWorld(_ api: APIHarness) async throws -> World {
        var tokens: [Role: String] = [:]
        var ids: [Role: UUID] = [:]
        for role in Role.allCases {
            let session = try await api.signIn("\(role.rawValue)-\(UUID().uuidString.prefix(6))")
            tokens[role] = session.accessToken
            ids[role] = session.user.id
        }
        let diary = try await api.createDiary("秘密の日記", type: .family, token: tokens[.owner]!)
        _ = try await api.join(diary.inviteCode, token: tokens[.member]!)
        _ = try await api.join(diary.inviteCode, token: tokens[.exMember]!)
        let photo = try PhotoUploadTests.uploaded(try await api.upload(TestImages.jpeg(), token: tokens[.owner]!))
        let posted = try await api.call(.post, "/v1/diaries/\(diary.id)/entries", token: tokens[.owner]!,
                                        body: CreateEntryRequest(content: "誰にも言えない話", photoIds: [photo.id]))
        let entry = try posted.decode(Entry.self)
        _ = try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(entry.id)/read", token: tokens[.exMember]!)
        let left = try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(ids[.exMember]!)", token: tokens[.exMember]!)
        guard left.status == .noContent else { throw HarnessError("ex-member could not leave: \(left.text)") }
        let rotated = try await api.call(.post, "/v1/diaries/\(diary.id)/invite-code", token: tokens[.owner]!).decode(InviteCodeResponse.self)
        return World(
            tokens: tokens, ids: ids, diary: diary, ownersEntry: entry.id, ownersPhoto: photo.id,
            secrets: [
                "秘密の日記", "誰にも言えない話", diary.inviteCode, rotated.inviteCode, ids[.owner]!.uuidString, ids[.member]!.uuidString,
                photo.id.uuidString, photo.id.uuidString.lowercased(), "/v1/photos/",
            ]
        )
    }

    struct Case {
        var name: String
        var method: HTTPRequest.Method
        var path: String
        var json: String?
        var expected: [Role: HTTPResponse.Status]
    }

    static func cases(_ world: World) -> [Case] {
        let diary = "/v1/diaries/\(world.diary.id)"
        let entry = "\(diary)/entries/\(world.ownersEntry)"
        func statuses(_ owner: HTTPResponse.Status, _ member: HTTPResponse.Status, hidden: HTTPResponse.Status = .notFound) -> [Role: HTTPResponse.Status] {
            [.owner: owner, .member: member, .outsider: hidden, .exMember: hidden]
        }
        return [
            Case(name: "get diary", method: .get, path: diary, expected: statuses(.ok, .ok)),
            Case(name: "rename diary", method: .patch, path: diary, json: #"{"name":"改名"}"#, expected: statuses(.ok, .forbidden)),
            Case(name: "rotate invite code", method: .post, path: "\(diary)/invite-code", expected: statuses(.ok, .forbidden)),
            Case(name: "list members", method: .get, path: "\(diary)/members", expected: statuses(.ok, .ok)),
            Case(name: "remove the owner", method: .delete, path: "\(diary)/members/\(world.ids[.owner]!)", expected: [.member: .forbidden, .outsider: .notFound, .exMember: .notFound]),
            Case(name: "post entry", method: .post, path: "\(diary)/entries", json: #"{"content":"書く"}"#, expected: statuses(.created, .created)),
            Case(name: "timeline", method: .get, path: "\(diary)/entries", expected: statuses(.ok, .ok)),
            Case(name: "get entry", method: .get, path: entry, expected: statuses(.ok, .ok)),
            Case(name: "edit entry", method: .patch, path: entry, json: #"{"content":"直す"}"#, expected: statuses(.ok, .forbidden)),
            Case(name: "set entry photos", method: .patch, path: entry, json: #"{"photoIds":["\#(world.ownersPhoto)"]}"#, expected: statuses(.ok, .forbidden)),
            Case(name: "drop entry photos", method: .patch, path: entry, json: #"{"photoIds":[]}"#, expected: [.member: .forbidden, .outsider: .notFound, .exMember: .notFound]),
            Case(name: "post with the owner's photo", method: .post, path: "\(diary)/entries", json: #"{"content":"盗む","photoIds":["\#(world.ownersPhoto)"]}"#,
                 expected: [.member: .notFound, .outsider: .notFound, .exMember: .notFound]),
            Case(name: "mark read", method: .post, path: "\(entry)/read", expected: statuses(.noContent, .noContent)),
            Case(name: "list reads", method: .get, path: "\(entry)/reads", expected: statuses(.ok, .ok)),
            Case(name: "delete entry", method: .delete, path: entry, expected: [.member: .forbidden, .outsider: .notFound, .exMember: .notFound]),
        ]
    }

    /// Which of the two walls stand: the Swift policies (switched off with the debug-only
    /// `PolicyRule` switch, which makes every predicate `true`) and PostgreSQL's RLS
    /// (switched off by disabling it on every table). Either one alone must hold.
    enum Walls: String, CaseIterable, CustomTestStringConvertible {
        case both, databaseOnly, swiftOnly
        var testDescription: String { rawValue }
        var swiftChecksDisabled: Bool { self == .databaseOnly }
        var rowSecurityDisabled: Bool { self == .swiftOnly }
    }

    static let protectedTables = ["users", "diaries", "diary_members", "entries", "entry_reads", "entry_photos", "photo_uploads", "sessions", "refresh_tokens"]

    static func disableRowSecurity(_ api: APIHarness) async throws {
        for table in protectedTables {
            try await api.asSuperuser(PostgresQuery(unsafeSQL: "alter table \(table) disable row level security"))
        }
    }

    @Test(
        "each route answers each role as the policy says, and nothing leaks to outsiders or ex-members",
        arguments: Walls.allCases, DatabaseRoute.allCases
    )
    func matrix(walls: Walls, route: DatabaseRoute) async throws {
        try await APIHarness.run(route: route) { api in
            let world = try await Self.makeWorld(api)
            if walls.rowSecurityDisabled { try await Self.disableRowSecurity(api) }
            let swiftChecksDisabled = walls.swiftChecksDisabled
            var failures: [String] = []
            for testCase in Self.cases(world) {
                for role in Role.allCases {
                    guard let expected = testCase.expected[role] else { continue }
                    let reply = try await PolicyRule.$swiftChecksDisabled.withValue(swiftChecksDisabled) {
                        try await api.call(testCase.method, testCase.path, token: world.tokens[role]!, json: testCase.json)
                    }
                    if reply.status != expected {
                        failures.append("\(testCase.name) as \(role): \(reply.status.code), expected \(expected.code)")
                    }
                    if role == .outsider || role == .exMember {
                        for secret in world.secrets where reply.text.contains(secret) {
                            failures.append("\(testCase.name) as \(role) leaked \(secret)")
                        }
                    }
                }
            }
            for role in [Role.outsider, .exMember] {
                let list = try await PolicyRule.$swiftChecksDisabled.withValue(swiftChecksDisabled) {
                    try await api.call(.get, "/v1/diaries", token: world.tokens[role]!)
                }
                #expect(try list.decode(DiaryList.self).diaries.isEmpty, "\(role) sees a diary in the list")
                for secret in world.secrets where list.text.contains(secret) { failures.append("list as \(role) leaked \(secret)") }
            }
            #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        }
    }

    /// Shows that the walls are what protects the diary, so the test above can fail.
    @Test("with both walls down, an outsider reads the diary")
    func bothWallsDown() async throws {
        try await APIHarness.run { api in
            let world = try await Self.makeWorld(api)
            try await Self.disableRowSecurity(api)
            let reply = try await PolicyRule.$swiftChecksDisabled.withValue(true) {
                try await api.call(.get, "/v1/diaries/\(world.diary.id)/entries/\(world.ownersEntry)", token: world.tokens[.outsider]!)
            }
            #expect(reply.status == .ok)
            #expect(reply.text.contains("誰にも言えない話"))
        }
    }

    @Test("members of an anonymous diary see each other only as aliases, everywhere")
    func anonymousDiary() async throws {
        try await APIHarness.run { api in
            let hana = try await api.signIn("花子")
            let taro = try await api.signIn("太郎")
            let diary = try await api.createDiary("匿名ノート", type: .anonymous, token: hana.accessToken)
            _ = try await api.join(diary.inviteCode, token: taro.accessToken)
            let entry = try await api.post("こんにちは", in: diary.id, token: hana.accessToken).decode(Entry.self)
            _ = try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(entry.id)/read", token: hana.accessToken)
            try await api.asSuperuser("update users set profile_image_url = 'https://img.example/hana.png' where id = \(hana.user.id)")

            let paths = [
                "/v1/diaries", "/v1/diaries/\(diary.id)", "/v1/diaries/\(diary.id)/members", "/v1/diaries/\(diary.id)/entries",
                "/v1/diaries/\(diary.id)/entries/\(entry.id)", "/v1/diaries/\(diary.id)/entries/\(entry.id)/reads",
            ]
            for path in paths {
                let reply = try await api.call(.get, path, token: taro.accessToken)
                #expect(reply.status == .ok, "\(path)")
                for secret in [hana.user.id.uuidString, "花子", "hana.png"] {
                    #expect(!reply.text.contains(secret), "\(path) shows \(secret) to the other member")
                }
            }
            let members = try await api.call(.get, "/v1/diaries/\(diary.id)/members", token: taro.accessToken).decode(MemberList.self)
            let alias = try #require(members.members.first { $0.role == .owner })
            #expect(alias.displayName.hasPrefix("匿名"))
            let seen = try await api.call(.get, "/v1/diaries/\(diary.id)/entries/\(entry.id)", token: taro.accessToken).decode(Entry.self)
            #expect(seen.author.id == alias.userId)
            #expect(seen.readBy.map(\.userId) == [alias.userId])
        }
    }
}
