import APNSTestServer
import DiaryModels
import Foundation
import NIOConcurrencyHelpers
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP

/// From the entry's transaction to the APNs stand-in: who gets what, and what Apple's
/// answers do to the outbox.
@Suite("Push delivery", .timeLimit(.minutes(3)))
struct PushDeliveryTests {
    /// alice and bob share a diary of `type`; bob has two devices, alice one.
    struct Couple {
        var alice: Session
        var bob: Session
        var diary: Diary
        var aliceDevice: String
        var bobDevices: [String]
    }

    static func couple(_ api: APIHarness, type: DiaryType = .couple, names: (String, String) = ("alice", "bob")) async throws -> Couple {
        let alice = try await api.signIn(names.0)
        let bob = try await api.signIn(names.1)
        let diary = try await api.createDiary("二人", type: type, token: alice.accessToken)
        #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
        let aliceDevice = PushFixture.deviceToken()
        let bobDevices = [PushFixture.deviceToken(), PushFixture.deviceToken()]
        try await api.call(.put, "/v1/me/devices/\(aliceDevice)", token: alice.accessToken, json: #"{"environment":"sandbox"}"#)
        for device in bobDevices {
            try await api.call(.put, "/v1/me/devices/\(device)", token: bob.accessToken, json: #"{"environment":"production"}"#)
        }
        return Couple(alice: alice, bob: bob, diary: diary, aliceDevice: aliceDevice, bobDevices: bobDevices)
    }

    /// Rows of the outbox not yet settled: every one, or those for `devices`.
    static func pending(_ api: APIHarness, devices: [String]? = nil) async throws -> Int {
        let rows = if let devices {
            try await api.asSuperuser("select count(*) from push_outbox where dead_at is null and device_token = any(\(devices))")
        } else {
            try await api.asSuperuser("select count(*) from push_outbox where dead_at is null")
        }
        return try rows.first!.decode("count", as: Int.self)
    }

    static func listen(_ api: APIHarness) -> PostgresConfiguration { api.database.as(TestDatabase.appRole) }

    @Test("a new entry reaches every device of every other member, with the author's name and no content")
    func newEntry() async throws {
        let push = try await PushFixture.start()
        defer { Task { try? await push.standIn.shutdown() } }
        try await APIHarness.run(push: PushConfiguration(apns: push.apns), pushDelivery: PushFixture.quickOptions) { api in
            try await Self.newEntryReachesOtherMembers(api, push)
        }
    }

    /// The delivery worker's path from a post to the stand-in, on whatever database `api`
    /// serves (also run on the cluster: CitusClusterTests).
    static func newEntryReachesOtherMembers(_ api: APIHarness, _ push: PushFixture, names: (String, String) = ("alice", "bob")) async throws {
        let couple = try await Self.couple(api, names: names)
        let entry = try await api.post("秘密の内容", in: couple.diary.id, token: couple.alice.accessToken).decode(Entry.self)
        let requests = try await push.standIn.waitForRequests(count: 2, timeout: .seconds(10))
        #expect(Set(requests.map(\.deviceToken)) == Set(couple.bobDevices))
        for request in requests {
            let payload = request.payload
            let aps = try #require(payload["aps"] as? [String: Any])
            let alert = try #require(aps["alert"] as? [String: Any])
            #expect(alert["title"] as? String == "新しい日記")
            #expect(alert["body"] as? String == "\(names.0)さんが日記を書きました")
            #expect(aps["sound"] as? String == "default")
            #expect(aps["thread-id"] as? String == couple.diary.id.canonicalText)
            #expect(payload["diaryId"] as? String == couple.diary.id.canonicalText)
            #expect(payload["entryId"] as? String == entry.id.canonicalText)
            #expect(!request.text.contains("秘密"))
        }
        // Every row the post queued is settled: no request can follow.
        let devices = couple.bobDevices + [couple.aliceDevice]
        try await waitUntil("the outbox is settled") { try await Self.pending(api, devices: devices) == 0 }
        #expect(push.standIn.requests.count == 2, "the author's own device gets nothing")
        #expect(push.standIn.violations.isEmpty, "\(push.standIn.violations)")
        #expect(try await Self.pending(api, devices: devices) == 0)
        let metrics = try await api.call(.get, "/metrics").text
        #expect(metrics.contains(#"push_sent_total{result="sent"}"#))
        #expect(metrics.contains("push_latency_seconds_bucket"))
        #expect(metrics.contains("push_outbox_pending"))
        #expect(metrics.contains("push_outbox_dead"))
    }

    @Test("an anonymous diary shows the author's alias, never their name")
    func anonymousAlias() async throws {
        let push = try await PushFixture.start()
        defer { Task { try? await push.standIn.shutdown() } }
        try await APIHarness.run(push: PushConfiguration(apns: push.apns), pushDelivery: PushFixture.quickOptions) { api in
            let couple = try await Self.couple(api, type: .anonymous)
            try await api.post("だれでしょう", in: couple.diary.id, token: couple.alice.accessToken)
            let fromAlice = try await push.standIn.waitForRequests(count: 2, timeout: .seconds(10))
            #expect(fromAlice.allSatisfy { ($0.payload["aps"] as? [String: Any]).flatMap { $0["alert"] as? [String: Any] }?["body"] as? String == "匿名1さんが日記を書きました" })
            try await api.post("二番目", in: couple.diary.id, token: couple.bob.accessToken)
            let all = try await push.standIn.waitForRequests(count: 3, timeout: .seconds(10))
            let toAlice = try #require(all.first { $0.deviceToken == couple.aliceDevice })
            #expect(toAlice.text.contains("匿名2さんが日記を書きました"))
            #expect(!all.contains { $0.text.contains("alice") || $0.text.contains("bob") })
        }
    }

    @Test("nothing is sent with new-entry notifications off, for an entry deleted before sending, or to a member who left; a rolled-back entry queues nothing")
    func notSent() async throws {
        let push = try await PushFixture.start()
        defer { Task { try? await push.standIn.shutdown() } }
        // Push is off while the outbox is filled: it waits, unsent.
        try await APIHarness.run { api in
            let couple = try await Self.couple(api)
            let carol = try await api.signIn("carol")
            let family = try await api.createDiary("家族", type: .family, token: couple.alice.accessToken)
            #expect(try await api.join(family.inviteCode, token: couple.bob.accessToken).status == .ok)
            #expect(try await api.join(family.inviteCode, token: carol.accessToken).status == .ok)
            let carolDevice = PushFixture.deviceToken()
            try await api.call(.put, "/v1/me/devices/\(carolDevice)", token: carol.accessToken, json: #"{"environment":"sandbox"}"#)

            // Deleted before sending.
            let deleted = try await api.post("消す", in: couple.diary.id, token: couple.alice.accessToken).decode(Entry.self)
            #expect(try await api.call(.delete, "/v1/diaries/\(couple.diary.id)/entries/\(deleted.id)", token: couple.alice.accessToken).status == .noContent)
            // Bob leaves the family diary after alice's post.
            try await api.post("家族へ", in: family.id, token: couple.alice.accessToken)
            #expect(try await api.call(.delete, "/v1/diaries/\(family.id)/members/\(couple.bob.user.id)", token: couple.bob.accessToken).status == .noContent)
            // Notifications off: bob hears nothing of alice's next post, carol still does.
            let off = try await api.call(.patch, "/v1/me", token: couple.bob.accessToken, json: #"{"settings":{"notificationNewEntry":false}}"#)
            #expect(off.status == .ok)
            try await api.post("オフ", in: family.id, token: couple.alice.accessToken)
            #expect(try await Self.pending(api) > 0, "the outbox waits while push is off")

            // A rolled-back post queues nothing.
            let before = try await Self.pending(api)
            _ = try? await api.asSuperuser("""
                do $$ begin
                    perform post_entry_as('\(unsafeRaw: couple.alice.user.id.canonicalText)', '\(unsafeRaw: couple.diary.id.canonicalText)', gen_random_uuid(), 'x');
                    raise exception 'roll back';
                end $$
                """)
            #expect(try await Self.pending(api) == before)

            try await push.delivering(pool: api.pool, listen: Self.listen(api)) {
                let delivered = try await push.standIn.waitForRequests(count: 2, timeout: .seconds(10))
                #expect(delivered.allSatisfy { $0.deviceToken == carolDevice })
                try await waitUntil("the outbox is settled") { try await Self.pending(api) == 0 }
            }
            #expect(push.standIn.requests.count == 2, "\(push.standIn.requests.map(\.deviceToken))")
            #expect(try await Self.pending(api) == 0)
        }
    }

    @Test("410 Unregistered and 400 BadDeviceToken remove the device; DeviceTokenNotForTopic too")
    func unregistered() async throws {
        let push = try await PushFixture.start()
        defer { Task { try? await push.standIn.shutdown() } }
        try await APIHarness.run(push: PushConfiguration(apns: push.apns), pushDelivery: PushFixture.quickOptions) { api in
            let couple = try await Self.couple(api)
            let gone = couple.bobDevices[0], bad = couple.bobDevices[1]
            push.standIn.respond { request in
                switch request.deviceToken {
                case gone: .refuse(status: 410, reason: "Unregistered")
                case bad: .refuse(status: 400, reason: "BadDeviceToken")
                default: .ok
                }
            }
            try await api.post("届く?", in: couple.diary.id, token: couple.alice.accessToken)
            _ = try await push.standIn.waitForRequests(count: 2, timeout: .seconds(10))
            try await waitUntil { try await api.call(.get, "/v1/me/devices", token: couple.bob.accessToken).decode(DeviceList.self).devices.isEmpty }
            #expect(try await Self.pending(api) == 0)
        }
    }

    @Test("500 and 429 are retried with growing waits, 429 no sooner than its Retry-After")
    func retries() async throws {
        let push = try await PushFixture.start()
        defer { Task { try? await push.standIn.shutdown() } }
        let answered = NIOLockedValueBox(0)
        try await APIHarness.run(push: PushConfiguration(apns: push.apns), pushDelivery: PushFixture.quickOptions) { api in
            let couple = try await Self.couple(api)
            try await api.call(.delete, "/v1/me/devices/\(couple.bobDevices[1])", token: couple.bob.accessToken)
            push.standIn.respond { _ in
                let count = answered.withLockedValue { $0 += 1; return $0 }
                switch count {
                case 1: return .refuse(status: 500, reason: "InternalServerError")
                case 2: return .refuse(status: 503, reason: "ServiceUnavailable")
                case 3: return .refuse(status: 429, reason: "TooManyRequests", retryAfter: 1)
                default: return .ok
                }
            }
            try await api.post("再送", in: couple.diary.id, token: couple.alice.accessToken)
            let requests = try await push.standIn.waitForRequests(count: 4, timeout: .seconds(20))
            let gaps = zip(requests.dropFirst(), requests).map { $0.receivedAt.timeIntervalSince($1.receivedAt) }
            // base 200 ms: the first wait is 100–200 ms, the second 200–400 ms, then Retry-After: 1 s.
            #expect(gaps[0] >= 0.09)
            #expect(gaps[1] >= 0.19)
            #expect(gaps[2] >= 0.99)
            try await waitUntil { try await Self.pending(api) == 0 }
            let attempts = try await api.asSuperuser("select count(*) from push_outbox").first!.decode("count", as: Int.self)
            #expect(attempts == 0, "the delivered row is gone")
        }
    }

    @Test("one provider token serves many pushes; after 403 ExpiredProviderToken a new one is signed and the push retried")
    func providerTokens() async throws {
        let push = try await PushFixture.start()
        defer { Task { try? await push.standIn.shutdown() } }
        let expireOnce = NIOLockedValueBox(false)
        try await APIHarness.run(push: PushConfiguration(apns: push.apns), pushDelivery: PushFixture.quickOptions) { api in
            let couple = try await Self.couple(api)
            for index in 0..<5 { try await api.post("その\(index)", in: couple.diary.id, token: couple.alice.accessToken) }
            _ = try await push.standIn.waitForRequests(count: 10, timeout: .seconds(10))
            #expect(push.standIn.providerTokens.count == 1)

            push.standIn.respond { _ in
                expireOnce.withLockedValue { expired in
                    if expired { return .ok }
                    expired = true
                    return .refuse(status: 403, reason: "ExpiredProviderToken")
                }
            }
            try await api.post("更新", in: couple.diary.id, token: couple.alice.accessToken)
            _ = try await push.standIn.waitForRequests(count: 13, timeout: .seconds(10))
            #expect(push.standIn.providerTokens.count == 2)
            try await waitUntil { try await Self.pending(api) == 0 }
        }
    }

    @Test("a provider token refused twice is a configuration error: the rows stay pending, never dropped")
    func refusedConfiguration() async throws {
        let push = try await PushFixture.start()
        defer { Task { try? await push.standIn.shutdown() } }
        try await APIHarness.run(push: PushConfiguration(apns: push.apns), pushDelivery: PushFixture.quickOptions) { api in
            let couple = try await Self.couple(api)
            push.standIn.respond { _ in .refuse(status: 403, reason: "InvalidProviderToken") }
            try await api.post("設定ミス", in: couple.diary.id, token: couple.alice.accessToken)
            // Each row: a request, a new token, a second request; then held, and tried again later.
            _ = try await push.standIn.waitForRequests(count: 6, timeout: .seconds(10))
            let rows = try await api.asSuperuser("select count(*) filter (where dead_at is null) as pending, count(*) as total, max(last_error) as error from push_outbox")
            #expect(try rows.first!.decode("pending", as: Int.self) == 2)
            #expect(try rows.first!.decode("total", as: Int.self) == 2)
            #expect(try rows.first!.decode("error", as: String.self).contains("InvalidProviderToken"))
            push.standIn.respond { _ in .ok }
            try await waitUntil { try await Self.pending(api) == 0 }
        }
    }
}

