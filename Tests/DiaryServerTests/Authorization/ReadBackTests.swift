import Crypto
import DiaryModels
import Foundation
import HTTPTypes
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP

/// A write answers with what it wrote, read in its own transaction as the caller (`ReadBack`),
/// so a committed write never answers as a failure, on one PostgreSQL and on Citus alike.
@Suite("A write's answer, read in the write's own transaction")
struct ReadBackTests {
    @Test("every write that answers with what it wrote sends one transaction, whose last statement reads the answer as the caller")
    func oneTransaction() async throws {
        try await APIHarness.run { api in try await Self.everyWriteAnswersFromItsTransaction(api, citus: false) }
    }

    /// Also run on the cluster (CitusClusterTests), where a diary's answer goes through
    /// `read_back_diary` and an entry's through `read_back_entry`.
    static func everyWriteAnswersFromItsTransaction(_ api: APIHarness, citus: Bool) async throws {
        let tag = UUID().uuidString.prefix(8).lowercased()
        let alice = try await api.signIn("read-back-alice-\(tag)"), bob = try await api.signIn("read-back-bob-\(tag)")
        let diaryReadBack = citus ? "read_back_diary(" : "diary_response(", entryReadBack = citus ? "read_back_entry(" : "entry_response("
        let meReadBack = "from users where"

        /// The reply to `request`, which must have sent one transaction whose last statement
        /// before its COMMIT holds `readBack`.
        func answered(_ name: String, _ status: HTTPResponse.Status, readBack: String, _ request: () async throws -> APIHarness.Reply) async throws -> APIHarness.Reply {
            let recorder = RequestScope.StatementRecorder()
            let reply = try await RequestScope.$recorder.withValue(recorder) { try await request() }
            #expect(reply.status == status, "\(name): \(reply.status) \(reply.text)")
            let transactions = recorder.recorded
            #expect(transactions.count == 1, "\(name): \(transactions.count) transactions")
            let statements = transactions.first?.prefix { $0.sql != "COMMIT" } ?? []
            #expect(statements.last?.sql.contains(readBack) == true, "\(name): the transaction ends with \(statements.last?.sql ?? "nothing")")
            return reply
        }

        let id = UUID()
        let create = CreateDiaryRequest(id: id, name: "読み返し", type: .anonymous)
        let created = try await answered("create", .created, readBack: diaryReadBack) {
            try await api.call(.post, "/v1/diaries", token: alice.accessToken, body: create)
        }.decode(Diary.self)
        #expect(created.id == id && created.role == .owner && created.members.map(\.displayName) == ["read-back-alice-\(tag)"])
        let replayed = try await answered("create again", .ok, readBack: diaryReadBack) {
            try await api.call(.post, "/v1/diaries", token: alice.accessToken, body: create)
        }.decode(Diary.self)
        #expect(replayed == created)

        let renamed = try await answered("rename", .ok, readBack: diaryReadBack) {
            try await api.call(.patch, "/v1/diaries/\(id)", token: alice.accessToken, body: UpdateDiaryRequest(name: "改名"))
        }.decode(Diary.self)
        #expect(renamed.name == "改名")
        let rotated = try await answered("rotate", .ok, readBack: diaryReadBack) {
            try await api.call(.post, "/v1/diaries/\(id)/invite-code", token: alice.accessToken)
        }.decode(InviteCodeResponse.self)
        #expect(rotated.inviteCode != created.inviteCode)

        let joined = try await answered("join", .ok, readBack: diaryReadBack) {
            try await api.join(rotated.inviteCode, token: bob.accessToken)
        }.decode(Diary.self)
        #expect(joined.id == id && joined.role == .member && joined.memberCount == 2)
        #expect(joined.members.map(\.displayName) == ["匿名1", "read-back-bob-\(tag)"], "the joiner's answer has the others' aliases")

        let photo = try await EntryPhotoTests.upload(api, alice)
        let entryID = UUID()
        let posted = try await answered("post", .created, readBack: entryReadBack) {
            try await api.call(.post, "/v1/diaries/\(id)/entries", token: alice.accessToken,
                               body: CreateEntryRequest(id: entryID, content: "同じ取引で", photoIds: [photo.id]))
        }.decode(Entry.self)
        #expect(posted.id == entryID && posted.isMine && posted.photos.map(\.id) == [photo.id])
        let edited = try await answered("edit", .ok, readBack: entryReadBack) {
            try await api.call(.patch, "/v1/diaries/\(id)/entries/\(entryID)", token: alice.accessToken, body: UpdateEntryRequest(content: "書き直し"))
        }.decode(Entry.self)
        #expect(edited.content == "書き直し" && edited.photos.map(\.id) == [photo.id])

        let me = try await answered("update me", .ok, readBack: meReadBack) {
            try await api.call(.patch, "/v1/me", token: bob.accessToken, body: UpdateMeRequest(displayName: "ボブ"))
        }.decode(Me.self)
        #expect(me.displayName == "ボブ")
        let withPhoto = try await answered("profile photo", .ok, readBack: meReadBack) {
            try await api.upload(TestImages.jpeg(width: 8, height: 8), token: bob.accessToken, to: "/v1/me/photo", method: .put)
        }.decode(Me.self)
        #expect(withPhoto.profileImageUrl != nil)
        let withoutPhoto = try await answered("profile photo removed", .ok, readBack: meReadBack) {
            try await api.call(.delete, "/v1/me/photo", token: bob.accessToken)
        }.decode(Me.self)
        #expect(withoutPhoto.profileImageUrl == nil)
    }

    @Test("diary_response and entry_response answer what diaryColumns and entryColumns read, for an owner, a member, a departed author and a stranger, in family and anonymous diaries")
    func responsesAreTheReadsTwins() async throws {
        try await APIHarness.run { api in
            let tag = UUID().uuidString.prefix(8).lowercased()
            let alice = try await api.signIn("twin-alice-\(tag)"), bob = try await api.signIn("twin-bob-\(tag)")
            let carol = try await api.signIn("twin-carol-\(tag)"), mallory = try await api.signIn("twin-mallory-\(tag)")
            _ = try await ProfilePhotoTests.setPhoto(api, TestImages.jpeg(width: 8, height: 8), token: alice.accessToken)
            var diaries: [(diary: UUID, entries: [UUID])] = []
            for type in [DiaryType.family, .anonymous] {
                let diary = try await api.createDiary("双子 \(type.rawValue)", type: type, token: alice.accessToken)
                #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
                var entries: [UUID] = []
                let photo = try await EntryPhotoTests.upload(api, alice)
                let withPhoto = try await api.call(.post, "/v1/diaries/\(diary.id)/entries", token: alice.accessToken,
                                                   body: CreateEntryRequest(content: "写真つき", photoIds: [photo.id]))
                entries.append(try withPhoto.decode(Entry.self).id)
                #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(entries[0])/read", token: bob.accessToken).status == .noContent)
                entries.append(try await api.post("ボブから", in: diary.id, token: bob.accessToken).decode(Entry.self).id)
                if type == .family {
                    #expect(try await api.join(diary.inviteCode, token: carol.accessToken).status == .ok)
                    entries.append(try await api.post("さよなら", in: diary.id, token: carol.accessToken).decode(Entry.self).id)
                    #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(carol.user.id)", token: carol.accessToken).status == .noContent)
                }
                diaries.append((diary.id, entries))
            }

            var compared = 0
            for session in [alice, bob, mallory] {
                let scope = try await Self.scope(api, session)
                for (diary, entries) in diaries {
                    let rows = try await scope.read([
                        "\(DiaryRepository.diaryColumns(ofDiary: diary)) where diaries.id = \(diary) and \(DiariesPolicy.select.using)",
                        "select * from diary_response(\(diary))",
                    ])
                    let read = try rows[0].map { try DiaryRepository.diary(from: $0, invites: scope.inviteLinks, links: scope.photoLinks) }
                    let answered = try rows[1].map { try DiaryRepository.diary(from: $0, invites: scope.inviteLinks, links: scope.photoLinks) }
                    #expect(answered == read, "\(session.user.displayName), diary \(diary)")
                    #expect(read.count == (session.user.id == mallory.user.id ? 0 : 1))
                    for entry in entries {
                        let rows = try await scope.read([
                            "\(EntryRepository.entryColumns(inDiary: diary)) where \(EntriesPolicy.select(inDiary: diary)) and entries.id = \(entry)",
                            "select * from entry_response(\(diary), \(entry))",
                        ])
                        let read = try rows[0].map { try EntryRepository.entry(from: $0, links: scope.photoLinks) }
                        #expect(try rows[1].map { try EntryRepository.entry(from: $0, links: scope.photoLinks) } == read, "\(session.user.displayName), entry \(entry)")
                        compared += read.count
                    }
                }
            }
            #expect(compared == 10, "both members read all five entries; the stranger none")
        }
    }

    @Test("a response function reads through the caller's policies even when the owner calls it, gives back the role it was called with, and refuses inside a SECURITY DEFINER function rather than read as the owner")
    func responsesReadAsTheCaller() async throws {
        try await APIHarness.run { api in
            let tag = UUID().uuidString.prefix(8).lowercased()
            let alice = try await api.signIn("as-caller-alice-\(tag)"), bob = try await api.signIn("as-caller-bob-\(tag)")
            let mallory = try await api.signIn("as-caller-mallory-\(tag)")
            let diary = try await api.createDiary("匿名の", type: .anonymous, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            let entry = try await api.post("見せない", in: diary.id, token: alice.accessToken).decode(Entry.self)

            try await TestDatabase.withPool(api.database.as(TestDatabase.ownerRole), size: 1) { owner in
                for (session, names, entries) in [(bob, ["匿名1", "as-caller-bob-\(tag)"], 1), (mallory, [], 0)] {
                    let identity = try await Self.scope(api, session).identity
                    let results = try await owner.transaction([
                        "select authenticate(\(identity.sessionID), \(identity.userID))",
                        // A role of the session's own, which the functions must give back, not reset.
                        "select set_config('role', \(TestDatabase.ownerRole), true)",
                        "select member_names from diary_response(\(diary.id))",
                        // No membership test of its own: only the caller's policies hide the entry from a stranger.
                        "select count(*)::int8 as n from entry_response(\(diary.id), \(entry.id))",
                        "select current_setting('role') as role",
                    ])
                    #expect(try results[2].first?.decode("member_names", as: [String].self) ?? [] == names, "\(session.user.displayName)")
                    #expect(try results[3].first?.decode("n", as: Int.self) == entries, "\(session.user.displayName)")
                    #expect(try results[4].first?.decode("role", as: String.self) == TestDatabase.ownerRole, "the role it was called with is back")
                }
            }
            // On one PostgreSQL the router runs the response function inside its own SECURITY
            // DEFINER context, where the owner cannot take the caller's role.
            let scope = try await Self.scope(api, bob)
            await #expect { try await scope.read("select * from read_back_diary(\(diary.id))") } throws: { error in
                (error as? PostgresError)?.kind == .insufficientPrivilege
            }
        }
    }

    static func scope(_ api: APIHarness, _ session: Session, database: RequestScope.Database = .single) async throws -> RequestScope {
        let tokens = TokenService(key: try TokenService.loadKey(path: nil, dataDirectory: api.dataDirectory, production: false))
        return RequestScope(
            identity: try await tokens.verifyAccessToken(session.accessToken), pool: api.pool, photoLinks: PhotoLinks(key: SymmetricKey(size: .bits256)),
            inviteLinks: InviteLinks(publicURL: ServerConfiguration.developmentPublicURL), database: database)
    }
}
