import DiaryModels
import Foundation
import HTTPTypes
import PostgresClient
import TestSupport
import Testing

@testable import DiaryCore
@testable import DiaryHTTP

/// A restore never shows anyone an entry, photo, receipt, name or member they could not read
/// as a member (issue 63): only a former member after whose departure nobody changed the
/// diary may restore it, later departures aside; it rotates the invite code; it counts as a
/// creation on the free plan; and the closure's push goes only to those who may act on it,
/// under the name they knew.
@Suite("Restores show nothing a member never saw")
struct RestorePrivacyTests {
    /// What the mother does after the child left, each a change the child never saw.
    enum ChangeAfterLeaving: String, CaseIterable, CustomStringConvertible {
        case post, edit, read, reread, rename, join, photo
        var description: String { rawValue }
    }

    struct Family {
        var mother: Session
        var child: Session
        var diary: Diary
        /// The mother's entry, which the child saw.
        var entry: Entry
        /// The child's entry, which nobody has read.
        var childsEntry: Entry
    }

    static func family(_ api: APIHarness) async throws -> Family {
        let mother = try await api.signIn("Mother"), child = try await api.signIn("Child")
        let diary = try await api.createDiary("家族", type: .family, token: mother.accessToken)
        #expect(try await api.join(diary.inviteCode, token: child.accessToken).status == .ok)
        let entry = try await api.post("母より", in: diary.id, token: mother.accessToken).decode(Entry.self)
        let childsEntry = try await api.post("子より", in: diary.id, token: child.accessToken).decode(Entry.self)
        return Family(mother: mother, child: child, diary: diary, entry: entry, childsEntry: childsEntry)
    }

    static func change(_ change: ChangeAfterLeaving, _ api: APIHarness, _ family: Family) async throws {
        let diary = family.diary.id, token = family.mother.accessToken
        let entryPath = "/v1/diaries/\(diary)/entries/\(family.entry.id)"
        let status: HTTPResponse.Status
        switch change {
        case .post: status = try await api.post("子が去った後に", in: diary, token: token).status
        case .edit: status = try await api.call(.patch, entryPath, token: token, json: #"{"content":"書き直した"}"#).status
        case .rename: status = try await api.call(.patch, "/v1/diaries/\(diary)", token: token, json: #"{"name":"母の日記"}"#).status
        case .photo:
            let photo = try await EntryPhotoTests.upload(api, family.mother)
            status = try await api.call(.patch, entryPath, token: token, json: #"{"photoIds":["\#(photo.id.canonicalText)"]}"#).status
        case .read, .reread:
            // A receipt the child never saw: the mother reads the child's entry after they left
            // (again, for reread: a receipt's later time is news too).
            status = try await api.call(.post, "/v1/diaries/\(diary)/entries/\(family.childsEntry.id)/read", token: token).status
        case .join:
            let father = try await api.signIn("Father")
            status = try await api.join(family.diary.inviteCode, token: father.accessToken).status
            try await ClosedDiaryTests.leave(api, diary, father)
        }
        #expect(status.code < 300, "\(change): \(status)")
    }

    @Test("a former member after whose departure the diary changed may not restore it (403), the Data Safety Center says so, and they still export their own entries; the last to leave restores", arguments: ChangeAfterLeaving.allCases)
    func changedAfterLeaving(_ change: ChangeAfterLeaving) async throws {
        try await APIHarness.run { api in
            let family = try await Self.family(api)
            if change == .reread {
                #expect(try await api.call(.post, "/v1/diaries/\(family.diary.id)/entries/\(family.childsEntry.id)/read", token: family.mother.accessToken).status == .noContent)
            }
            try await ClosedDiaryTests.leave(api, family.diary.id, family.child)
            try await Self.change(change, api, family)
            try await ClosedDiaryTests.leave(api, family.diary.id, family.mother)
            #expect(try await ClosedDiaryTests.closedState(api, family.diary.id).closed)

            let childs = try await api.call(.get, "/v1/data-safety", token: family.child.accessToken).decode(DataSafety.self).departures
            #expect(childs.map(\.diaryId) == [family.diary.id] && childs.first?.restorable == false, "\(change)")
            let refused = try await api.call(.post, "/v1/diaries/\(family.diary.id)/restore", token: family.child.accessToken)
            #expect(refused.status == .forbidden && refused.code == "forbidden", "\(change): \(refused.text)")
            #expect(refused.text.contains("export"), "the refusal says what they may still do")
            let export = try await DiaryExportTests.unpack(try await api.call(.get, "/v1/me/export", token: family.child.accessToken))
            #expect(try export.decode([PersonalExportedEntry].self, "entries.json").map(\.content) == ["子より"])

            let mothers = try await api.call(.get, "/v1/data-safety", token: family.mother.accessToken).decode(DataSafety.self).departures
            #expect(mothers.first?.restorable == true)
            #expect(try await api.call(.post, "/v1/diaries/\(family.diary.id)/restore", token: family.mother.accessToken).status == .ok)
        }
    }

    @Test("later departures and deletions do not count: a child who left before their father and mother, nothing but a deletion between, restores")
    func laterDeparturesDoNotCount() async throws {
        try await APIHarness.run { api in
            let family = try await Self.family(api)
            let father = try await api.signIn("Father")
            #expect(try await api.join(family.diary.inviteCode, token: father.accessToken).status == .ok)
            try await ClosedDiaryTests.leave(api, family.diary.id, family.child)
            #expect(try await api.call(.delete, "/v1/diaries/\(family.diary.id)/entries/\(family.entry.id)", token: family.mother.accessToken).status == .noContent)
            try await ClosedDiaryTests.leave(api, family.diary.id, father)
            try await ClosedDiaryTests.leave(api, family.diary.id, family.mother)
            let childs = try await api.call(.get, "/v1/data-safety", token: family.child.accessToken).decode(DataSafety.self).departures
            #expect(childs.first?.restorable == true)
            let restored = try await api.call(.post, "/v1/diaries/\(family.diary.id)/restore", token: family.child.accessToken)
            #expect(restored.status == .ok, "\(restored.text)")
            #expect(try restored.decode(Diary.self).memberCount == 1)
        }
    }

    @Test("a restore rotates the invite code: whoever held the old one, a removed member among them, joins no more")
    func restoreRotatesTheCode() async throws {
        try await APIHarness.run { api in
            let family = try await Self.family(api)
            let removed = try await api.signIn("Removed")
            #expect(try await api.join(family.diary.inviteCode, token: removed.accessToken).status == .ok)
            #expect(try await api.call(.delete, "/v1/diaries/\(family.diary.id)/members/\(removed.user.id)", token: family.mother.accessToken).status == .noContent)
            try await ClosedDiaryTests.leave(api, family.diary.id, family.child)
            try await ClosedDiaryTests.leave(api, family.diary.id, family.mother)

            let restored = try await api.call(.post, "/v1/diaries/\(family.diary.id)/restore", token: family.mother.accessToken).decode(Diary.self)
            #expect(restored.inviteCode != family.diary.inviteCode)
            let old = try await api.join(family.diary.inviteCode, token: removed.accessToken)
            #expect(old.status == .notFound && old.code == "invite_code_invalid", "\(old.text)")
            #expect(try await api.join(restored.inviteCode, token: family.child.accessToken).status == .ok)
        }
    }

    @Test("on the free plan a restore counts as a creation: at the limit it is premium_required, saying what to do; under it, it takes the one free diary")
    func restoreOnTheFreePlan() async throws {
        try await APIHarness.run(billing: APIHarness.freePlan) { api in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob")
            let shared = try await api.createDiary("二人", type: .couple, token: bob.accessToken)
            #expect(try await api.join(shared.inviteCode, token: alice.accessToken).status == .ok)
            try await ClosedDiaryTests.leave(api, shared.id, bob)
            try await ClosedDiaryTests.leave(api, shared.id, alice)
            let own = try await api.createDiary("わたしの", type: .friends, token: alice.accessToken)

            let refused = try await api.call(.post, "/v1/diaries/\(shared.id)/restore", token: alice.accessToken)
            #expect(refused.status == .forbidden && refused.code == "premium_required", "\(refused.text)")
            #expect(refused.text.contains("upgrade"), "the detail says what to do: \(refused.text)")
            #expect(try await ClosedDiaryTests.closedState(api, shared.id).closed, "nothing changed")

            #expect(try await api.call(.delete, "/v1/diaries/\(own.id)/members/\(alice.user.id)", token: alice.accessToken).status == .noContent)
            let restored = try await api.call(.post, "/v1/diaries/\(shared.id)/restore", token: alice.accessToken)
            #expect(restored.status == .ok, "\(restored.text)")
            let another = try await api.call(.post, "/v1/diaries", token: alice.accessToken, body: CreateDiaryRequest(name: "もう一つ", type: .friends))
            #expect(another.status == .forbidden && another.code == "premium_required")
        }
    }

    @Test("the closure's push goes only to former members who left it themself, inside their window, under the name they knew, saying what they may do")
    func closurePushGoesToThoseWhoMayAct() async throws {
        try await APIHarness.run { api in
            let family = try await Self.family(api)
            let removed = try await api.signIn("Removed"), early = try await api.signIn("Early")
            for member in [removed, early] {
                #expect(try await api.join(family.diary.inviteCode, token: member.accessToken).status == .ok)
            }
            var devices: [UUID: String] = [:]
            for (index, session) in [family.mother, family.child, removed, early].enumerated() {
                let token = String(repeating: String(format: "%02x", index + 1), count: 32)
                devices[session.user.id] = token
                #expect(try await api.call(.put, "/v1/me/devices/\(token)", token: session.accessToken, json: #"{"environment":"sandbox"}"#).status.code < 300)
            }
            #expect(try await api.call(.delete, "/v1/diaries/\(family.diary.id)/members/\(removed.user.id)", token: family.mother.accessToken).status == .noContent)
            try await ClosedDiaryTests.leave(api, family.diary.id, early)
            try await ClosedDiaryTests.leave(api, family.diary.id, family.child)
            // Past the early leaver's window before the diary closes: nothing left for them to do.
            try await api.asSuperuser("update former_members set left_at = now() - interval '31 days' where diary_id = \(family.diary.id) and user_id = \(early.user.id)")
            #expect(try await api.call(.patch, "/v1/diaries/\(family.diary.id)", token: family.mother.accessToken, json: #"{"name":"母の日記"}"#).status == .ok)
            try await ClosedDiaryTests.leave(api, family.diary.id, family.mother)

            try await waitUntil { try await ClosedDiaryTests.closedState(api, family.diary.id).purgeAt != nil }
            let pushes = try await api.asSuperuser("select user_id, payload::text as payload from push_outbox where kind = 'diary_closed' order by user_id")
            var told: [UUID: String] = [:]
            for row in pushes { told[try row.decode("user_id")] = try row.decode("payload", as: String.self) }
            #expect(Set(told.keys) == [family.mother.user.id, family.child.user.id], "neither the removed member nor one past their window")
            let childs = try #require(told[family.child.user.id]), mothers = try #require(told[family.mother.user.id])
            #expect(childs.contains("「家族」") && !childs.contains("母の日記"), "the name the child knew: \(childs)")
            #expect(!childs.contains("復元") && childs.contains("書き出せます") && childs.contains(#""restorable": false"#), "the diary was renamed after the child left: \(childs)")
            #expect(mothers.contains("「母の日記」") && mothers.contains("復元でき") && mothers.contains(#""restorable": true"#), "\(mothers)")
        }
    }
}
