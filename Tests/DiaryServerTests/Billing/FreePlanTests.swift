import DiaryModels
import Foundation
import HTTPTypes
import Testing

@testable import DiaryCore
@testable import DiaryHTTP

/// The free plan's limits, the couple grant, and a lapsed plan that takes nothing away.
@Suite("Free plan and premium")
struct FreePlanTests {
    static func purchase(_ api: APIHarness, _ session: Session, product: String = "premium.monthly", days: Double = 30) async throws {
        let body = try RevenueCatWebhookTests.body(
            "initial_purchase", user: session.user.id, at: Date(), expiration: Date().addingTimeInterval(days * 24 * 3600), product: product)
        #expect(try RevenueCatWebhookTests.outcome(try await RevenueCatWebhookTests.send(api, body)) == "applied")
    }

    static func create(_ api: APIHarness, _ session: Session, _ name: String = "日記", type: DiaryType = .family) async throws -> APIHarness.Reply {
        try await api.call(.post, "/v1/diaries", token: session.accessToken, body: CreateDiaryRequest(name: name, type: type))
    }

    @Test("a free user creates one diary; the second is premium_required; joining is never limited")
    func oneDiary() async throws {
        try await APIHarness.run(billing: APIHarness.freePlan) { api in
            let alice = try await api.signIn("Alice")
            #expect(try await Self.create(api, alice).status == .created)
            let second = try await Self.create(api, alice)
            #expect(second.status == .forbidden && second.code == "premium_required")
            for name in ["B", "C", "D"] {
                let owner = try await api.signIn(name)
                let diary = try await api.createDiary(name, type: .friends, token: owner.accessToken)
                #expect(try await api.join(diary.inviteCode, token: alice.accessToken).status == .ok)
            }
            #expect(try await api.call(.get, "/v1/diaries", token: alice.accessToken).decode(DiaryList.self).diaries.count == 4)
        }
    }

    @Test("a create retried with the client's id answers the diary it made, past the free plan's limit; that id with another body, or another user's, is 409 conflict")
    func createRetriedWithItsID() async throws {
        try await APIHarness.run(billing: APIHarness.freePlan) { api in
            let alice = try await api.signIn("Alice"), bob = try await api.signIn("Bob")
            let id = UUID()
            let request = CreateDiaryRequest(id: id, name: "ふたり", type: .couple)
            let first = try await api.call(.post, "/v1/diaries", token: alice.accessToken, body: request)
            #expect(first.status == .created)
            let made = try first.decode(Diary.self)
            #expect(made.id == id)
            // The plan allows one: only a retry gets past its check, with what the first made.
            let retried = try await api.call(.post, "/v1/diaries", token: alice.accessToken, body: request)
            #expect(retried.status == .ok, "\(retried.text)")
            let again = try retried.decode(Diary.self)
            #expect(again.id == id && again.inviteCode == made.inviteCode && again.createdAt == made.createdAt)
            #expect(try await api.call(.get, "/v1/diaries", token: alice.accessToken).decode(DiaryList.self).diaries.map(\.id) == [id])
            #expect(try await Self.create(api, alice).code == "premium_required")

            for (who, body) in [(alice, CreateDiaryRequest(id: id, name: "べつ", type: .couple)), (alice, CreateDiaryRequest(id: id, name: "ふたり", type: .family)),
                                (bob, request)] {
                let refused = try await api.call(.post, "/v1/diaries", token: who.accessToken, body: body)
                #expect(refused.status == .conflict && refused.code == "conflict", "\(refused.status) \(refused.text)")
                #expect(!refused.text.contains(made.inviteCode), "the conflict tells nothing of the diary")
            }
            #expect(try await api.call(.get, "/v1/diaries", token: bob.accessToken).decode(DiaryList.self).diaries.isEmpty)
            let stored = try await api.call(.get, "/v1/diaries/\(id)", token: alice.accessToken).decode(Diary.self)
            #expect(stored.name == "ふたり" && stored.type == .couple && stored.memberCount == 1)
        }
    }

    @Test("20 concurrent creates by a free user make exactly one diary")
    func concurrentCreates() async throws {
        try await APIHarness.run(poolSize: 8, billing: APIHarness.freePlan) { api in
            let alice = try await api.signIn("Alice")
            let statuses = try await withThrowingTaskGroup(of: HTTPResponse.Status.self) { group in
                for index in 0..<20 { group.addTask { try await Self.create(api, alice, "日記\(index)").status } }
                return try await group.reduce(into: [HTTPResponse.Status]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == .created }.count == 1)
            #expect(statuses.filter { $0 == .forbidden }.count == 19)
            let owned = try await api.asSuperuser("select count(*) from diary_members where user_id = \(alice.user.id) and role = 'owner'")
            #expect(try owned.first!.decode("count", as: Int.self) == 1)
        }
    }

    @Test("a lapsed plan takes nothing away: its diaries and photos stay readable and writable; only new excess is refused")
    func lapsedPlan() async throws {
        try await APIHarness.run(billing: APIHarness.freePlan) { api in
            let alice = try await api.signIn("Alice")
            try await Self.purchase(api, alice)
            var diaries: [Diary] = []
            for index in 0..<3 { diaries.append(try await Self.create(api, alice, "日記\(index)").decode()) }
            let photos = [
                try PhotoUploadTests.uploaded(try await api.upload(TestImages.jpeg(width: 8, height: 8), token: alice.accessToken)),
                try PhotoUploadTests.uploaded(try await api.upload(TestImages.jpeg(width: 16, height: 8), token: alice.accessToken)),
            ]
            let entry = try await api.call(.post, "/v1/diaries/\(diaries[2].id)/entries", token: alice.accessToken,
                                           body: CreateEntryRequest(content: "旅行", photoIds: photos.map(\.id))).decode(Entry.self)

            try await api.asSuperuser("update users set premium_expires_at = now() - interval '1 day' where id = \(alice.user.id)")
            #expect(try await RevenueCatWebhookTests.me(api, alice).plan == .free)
            for diary in diaries {
                #expect(try await api.call(.get, "/v1/diaries/\(diary.id)/entries", token: alice.accessToken).status == .ok)
                #expect(try await api.post("まだ書ける", in: diary.id, token: alice.accessToken).status == .created)
            }
            let kept = try await api.call(.get, "/v1/diaries/\(diaries[2].id)/entries/\(entry.id)", token: alice.accessToken).decode(Entry.self)
            #expect(kept.photos.map(\.id) == photos.map(\.id))
            #expect(try await api.fetch(kept.photos[1].url).status == .ok)
            let edited = try await api.call(.patch, "/v1/diaries/\(diaries[2].id)/entries/\(entry.id)", token: alice.accessToken,
                                            body: UpdateEntryRequest(content: "旅行の続き", photoIds: photos.map(\.id)))
            #expect(edited.status == .ok, "keeping the photos it has is not new excess")

            #expect(try await Self.create(api, alice).code == "premium_required")
            let more = [
                try PhotoUploadTests.uploaded(try await api.upload(TestImages.jpeg(width: 24, height: 8), token: alice.accessToken)),
                try PhotoUploadTests.uploaded(try await api.upload(TestImages.jpeg(width: 32, height: 8), token: alice.accessToken)),
            ]
            let refused = try await api.call(.post, "/v1/diaries/\(diaries[0].id)/entries", token: alice.accessToken,
                                             body: CreateEntryRequest(content: "二枚", photoIds: more.map(\.id)))
            #expect(refused.status == .forbidden && refused.code == "premium_required")
        }
    }

    @Test("the couple plan makes the partner premium while both stay in their couple diary")
    func coupleGrant() async throws {
        try await APIHarness.run(billing: APIHarness.freePlan) { api in
            let alice = try await api.signIn("Alice")
            let bob = try await api.signIn("Bob")
            let diary = try await api.createDiary("ふたり", type: .couple, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            try await Self.purchase(api, alice, product: "premium.monthly")
            #expect(try await RevenueCatWebhookTests.me(api, bob).plan == .free, "a plain premium plan is the purchaser's alone")

            try await Self.purchase(api, alice, product: "couple.monthly")
            #expect(try await RevenueCatWebhookTests.me(api, alice).plan == .couple)
            let bobs = try await RevenueCatWebhookTests.me(api, bob)
            #expect(bobs.plan == .couple && bobs.isPremium)
            #expect(try await Self.create(api, bob).status == .created, "Bob may create beyond the free plan's diary")
            #expect(try await Self.create(api, bob, "二冊目").status == .created)

            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(bob.user.id)", token: bob.accessToken).status == .noContent)
            #expect(try await RevenueCatWebhookTests.me(api, bob).plan == .free, "the grant ends when either leaves")
            #expect(try await RevenueCatWebhookTests.me(api, alice).plan == .couple)
        }
    }

    @Test("no body sets isPremium, premiumExpiresAt or plan through PATCH /v1/me")
    func planIsReadOnly() async throws {
        try await APIHarness.run(billing: APIHarness.freePlan) { api in
            let alice = try await api.signIn("Alice")
            for field in [#""isPremium": true"#, #""premiumExpiresAt": "2099-01-01T00:00:00Z""#, #""plan": "premium""#] {
                let reply = try await api.call(.patch, "/v1/me", token: alice.accessToken, json: "{\(field)}")
                #expect(reply.status == .badRequest && reply.code == "read_only_field", "\(field)")
            }
            #expect(try await RevenueCatWebhookTests.me(api, alice).plan == .free)
        }
    }
}
