import DiaryModels
import Foundation
import HTTPTypes
import NIOCore
import Testing

@testable import DiaryCore
@testable import DiaryHTTP

/// `POST /v1/webhooks/revenuecat` with RevenueCat's own sample bodies (Fixtures/revenuecat).
@Suite("RevenueCat webhook")
struct RevenueCatWebhookTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/revenuecat")

    /// A fixture with its placeholders filled; `expiration` nil writes null.
    static func body(
        _ name: String, user: UUID? = nil, eventID: String = UUID().uuidString, at: Date = Date(), expiration: Date? = nil,
        product: String = "premium.monthly", environment: String = "PRODUCTION", from: UUID? = nil, to: UUID? = nil
    ) throws -> String {
        var text = try String(contentsOf: fixtures.appendingPathComponent("\(name).json"), encoding: .utf8)
        let replacements: [String: String] = [
            "{{USER_ID}}": user?.uuidString ?? "unknown", "{{EVENT_ID}}": eventID, "{{EVENT_MS}}": String(Int64(at.timeIntervalSince1970 * 1000)),
            "{{EXPIRATION_MS}}": expiration.map { String(Int64($0.timeIntervalSince1970 * 1000)) } ?? "null", "{{PRODUCT_ID}}": product,
            "{{ENVIRONMENT}}": environment, "{{FROM_USER_ID}}": from?.uuidString ?? "", "{{TO_USER_ID}}": to?.uuidString ?? "",
        ]
        for (placeholder, value) in replacements { text = text.replacingOccurrences(of: placeholder, with: value) }
        return text
    }

    static func send(_ api: APIHarness, _ body: String, authorization: String? = APIHarness.webhookAuthorization) async throws -> APIHarness.Reply {
        var headers: HTTPFields = [.contentType: "application/json"]
        if let authorization { headers[.authorization] = authorization }
        return try await api.client.execute(uri: "/v1/webhooks/revenuecat", method: .post, headers: headers, body: ByteBuffer(string: body)) { response in
            APIHarness.Reply(status: response.status, headers: response.headers, body: Data(buffer: response.body))
        }
    }

    static func outcome(_ reply: APIHarness.Reply) throws -> String {
        guard reply.status == .ok else { throw HarnessError("webhook answered \(reply.status): \(reply.text)") }
        return try #require(try JSONSerialization.jsonObject(with: reply.body) as? [String: Any])["status"] as? String ?? ""
    }

    static func me(_ api: APIHarness, _ session: Session) async throws -> Me {
        try await api.call(.get, "/v1/me", token: session.accessToken).decode()
    }

    static let month: TimeInterval = 30 * 24 * 3600

    @Test("each purchase type sets the plan's end; CANCELLATION keeps it; EXPIRATION ends it; null expiration is lifetime")
    func eventTypes() async throws {
        try await APIHarness.run { api in try await Self.eventTypesSetThePlan(api) }
    }

    /// The webhook's every event type, on whatever database `api` serves (also the cluster: CitusClusterTests).
    static func eventTypesSetThePlan(_ api: APIHarness, name: String = "Alice") async throws {
        let alice = try await api.signIn(name)
        let user = alice.user.id
        var at = Date().addingTimeInterval(-3600)
        func next() -> Date { at = at.addingTimeInterval(10); return at }
        #expect(try await Self.me(api, alice).plan == .free)
        for type in ["initial_purchase", "renewal", "uncancellation", "product_change", "subscription_extended"] {
            let end = Date().addingTimeInterval(Self.month).addingTimeInterval(Double(type.count))
            #expect(try Self.outcome(try await Self.send(api, try Self.body(type, user: user, at: next(), expiration: end))) == "applied", "\(type)")
            let me = try await Self.me(api, alice)
            #expect(me.isPremium && me.plan == .premium, "\(type)")
            #expect(abs((me.premiumExpiresAt ?? .distantPast).timeIntervalSince(end)) < 0.01, "\(type)")
        }
        let end = Date().addingTimeInterval(Self.month / 2)
        #expect(try Self.outcome(try await Self.send(api, try Self.body("cancellation", user: user, at: next(), expiration: end))) == "applied")
        let cancelled = try await Self.me(api, alice)
        #expect(cancelled.isPremium, "access lasts until the period ends")
        #expect(abs((cancelled.premiumExpiresAt ?? .distantPast).timeIntervalSince(end)) < 0.01)
        #expect(try Self.outcome(try await Self.send(api, try Self.body("expiration", user: user, at: next(), expiration: Date().addingTimeInterval(-1)))) == "applied")
        #expect(try await Self.me(api, alice).plan == .free)

        #expect(try Self.outcome(try await Self.send(api, try Self.body("non_renewing_purchase", user: user, at: next(), expiration: nil))) == "applied")
        let lifetime = try await Self.me(api, alice)
        #expect(lifetime.isPremium && lifetime.premiumExpiresAt == nil, "a lifetime purchase has no end")

        #expect(try Self.outcome(try await Self.send(api, try Self.body("test", user: user, at: next()))) == "ignored")
        #expect(try Self.outcome(try await Self.send(api, try Self.body("billing_issue", user: user, at: next()))) == "ignored")
        #expect(try await Self.me(api, alice).isPremium)
        let audit = try await api.asSuperuser("select count(*) from billing_events where user_id = \(user) and outcome = 'applied'")
        #expect(try audit.first!.decode("count", as: Int.self) == 8, "every applied event is recorded")
    }

    @Test("a wrong or missing Authorization is 401; with no secret configured the route is 404")
    func authorization() async throws {
        try await APIHarness.run { api in
            let body = try Self.body("initial_purchase", user: UUID(), expiration: Date().addingTimeInterval(Self.month))
            for header in [nil, "", "Bearer test-webhook-secret-012345678", APIHarness.webhookAuthorization + "x", "bearer test-webhook-secret-0123456789"] {
                let reply = try await Self.send(api, body, authorization: header)
                #expect(reply.status == .unauthorized, "\(header ?? "none")")
            }
            #expect(try await api.asSuperuser("select count(*) from billing_events").first!.decode("count", as: Int.self) == 0)
        }
        try await APIHarness.run(billing: BillingConfiguration()) { api in
            let reply = try await Self.send(api, try Self.body("test", user: UUID()))
            #expect(reply.status == .notFound)
        }
    }

    @Test("a repeated event id is 200 and changes nothing; an older event is recorded and ignored")
    func duplicatesAndOrder() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("Alice")
            let id = "evt-\(UUID())"
            let later = Date().addingTimeInterval(Self.month)
            let first = try Self.body("initial_purchase", user: alice.user.id, eventID: id, at: Date().addingTimeInterval(-60), expiration: later)
            #expect(try Self.outcome(try await Self.send(api, first)) == "applied")
            // The same id with other content is still the same event.
            let replay = try Self.body("expiration", user: alice.user.id, eventID: id, at: Date(), expiration: Date())
            #expect(try Self.outcome(try await Self.send(api, replay)) == "duplicate")
            #expect(try await Self.me(api, alice).isPremium)

            let stale = try Self.body("expiration", user: alice.user.id, at: Date().addingTimeInterval(-3600), expiration: Date().addingTimeInterval(-3600))
            #expect(try Self.outcome(try await Self.send(api, stale)) == "older")
            #expect(try await Self.me(api, alice).isPremium, "an event older than the last applied changes nothing")
            let rows = try await api.asSuperuser("select outcome from billing_events order by event_at").map { try $0.decode("outcome", as: String.self) }
            #expect(rows == ["older", "applied"])
        }
    }

    @Test("TRANSFER moves the plan from one user to the other")
    func transfer() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("Alice")
            let bob = try await api.signIn("Bob")
            let end = Date().addingTimeInterval(Self.month)
            _ = try Self.outcome(try await Self.send(api, try Self.body("initial_purchase", user: alice.user.id, at: Date().addingTimeInterval(-60), expiration: end)))
            #expect(try Self.outcome(try await Self.send(api, try Self.body("transfer", from: alice.user.id, to: bob.user.id))) == "applied")
            #expect(try await Self.me(api, alice).plan == .free)
            let bobs = try await Self.me(api, bob)
            #expect(bobs.plan == .premium && abs((bobs.premiumExpiresAt ?? .distantPast).timeIntervalSince(end)) < 0.01)
        }
    }

    @Test("an event for a user we do not know is 200, kept, and applied when the user appears within 7 days")
    func unknownUsers() async throws {
        try await APIHarness.run { api in
            let newcomer = UUID()
            let end = Date().addingTimeInterval(Self.month)
            #expect(try Self.outcome(try await Self.send(api, try Self.body("initial_purchase", user: newcomer, expiration: end))) == "unknown_user")
            let stranger = UUID()
            #expect(try Self.outcome(try await Self.send(api, try Self.body("initial_purchase", user: stranger, expiration: end))) == "unknown_user")
            try await api.asSuperuser("update billing_events set received_at = now() - interval '8 days' where \(stranger.uuidString) = any (user_ids)")
            try await api.asSuperuser("select add_user(\(newcomer), 'N'), add_user(\(stranger), 'S')")
            let plans = try await api.asSuperuser("select id, user_plan(id) as plan from users where id in (\(newcomer), \(stranger))")
            let byUser = Dictionary(uniqueKeysWithValues: try plans.map { (try $0.decode("id", as: UUID.self), try $0.decode("plan", as: String.self)) })
            #expect(byUser[newcomer] == "premium", "applied when the user appeared")
            #expect(byUser[stranger] == "free", "not after 7 days")
        }
    }

    @Test("SANDBOX events apply only where accepted, and are recorded either way")
    func sandbox() async throws {
        var production = APIHarness.billing
        production.acceptSandbox = false
        try await APIHarness.run(billing: production) { api in
            let alice = try await api.signIn("Alice")
            let body = try Self.body("initial_purchase", user: alice.user.id, expiration: Date().addingTimeInterval(Self.month), environment: "SANDBOX")
            #expect(try Self.outcome(try await Self.send(api, body)) == "sandbox")
            #expect(try await Self.me(api, alice).plan == .free)
        }
        try await APIHarness.run { api in
            let alice = try await api.signIn("Alice")
            let body = try Self.body("initial_purchase", user: alice.user.id, expiration: Date().addingTimeInterval(Self.month), environment: "SANDBOX")
            #expect(try Self.outcome(try await Self.send(api, body)) == "applied")
            #expect(try await Self.me(api, alice).plan == .premium)
        }
    }

    @Test("a malformed body or a missing field is 400, names the field, and records nothing: the corrected retry applies")
    func badBodies() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("Alice")
            let id = "evt-\(UUID())"
            let good = try Self.body("initial_purchase", user: alice.user.id, eventID: id, expiration: Date().addingTimeInterval(Self.month))
            let cases: [(String, String)] = [
                ("{not json", ""),
                ("[]", ""),
                (#"{"api_version":"1.0"}"#, "event"),
                (good.replacingOccurrences(of: #""app_user_id": "\#(alice.user.id.uuidString)","#, with: ""), "event.app_user_id"),
                (good.replacingOccurrences(of: #""type": "INITIAL_PURCHASE""#, with: #""type": 7"#), "event.type"),
                (good.replacingOccurrences(of: #""environment": "PRODUCTION""#, with: #""environment": "STAGING""#), "event.environment"),
                (good.replacingOccurrences(of: #""expiration_at_ms": "#, with: #""expiration_at_ms": "soon", "x": "#), "event.expiration_at_ms"),
            ]
            for (body, field) in cases {
                let reply = try await Self.send(api, body)
                #expect(reply.status == .badRequest && reply.code == "validation_failed", "\(field): \(reply.status)")
                #expect(field.isEmpty || reply.text.contains(field), "\(reply.text) names \(field)")
            }
            #expect(try await api.asSuperuser("select count(*) from billing_events").first!.decode("count", as: Int.self) == 0)
            #expect(try Self.outcome(try await Self.send(api, good)) == "applied")
            let big = "{\"event\":{\"pad\":\"" + String(repeating: "x", count: 70_000) + "\"}}"
            #expect(try await Self.send(api, big).status == .contentTooLarge)
        }
    }
}
