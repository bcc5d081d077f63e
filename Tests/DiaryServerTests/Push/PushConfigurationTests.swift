import Crypto
import Foundation
import Testing
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// APNS_* settings: all or nothing in production; off, and said why, elsewhere.
@Suite("Push configuration")
struct PushConfigurationTests {
    static func keyFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("apns-\(UUID().uuidString).p8").path
        try Data(P256.Signing.PrivateKey().pemRepresentation.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("production refuses a half-configured APNs and names what is missing")
    func halfConfiguredInProduction() throws {
        let environment = ["APNS_KEY_ID": "KEY1234567", "APNS_TOPIC": "app.zutto-nikki"]
        #expect {
            try PushConfiguration.fromEnvironment(production: true, environment)
        } throws: { error in
            let text = "\(error)"
            return text.contains("APNS_KEY_FILE") && text.contains("APNS_TEAM_ID") && !text.contains("APNS_TOPIC not")
        }
        // Outside production the same settings leave push off, and say why.
        let development = try PushConfiguration.fromEnvironment(production: false, environment)
        #expect(development.apns == nil)
        #expect(development.offReason == "APNS_KEY_FILE, APNS_TEAM_ID not set")
    }

    @Test("none set: push is off, in production too; all set: on, with the endpoint and CA given")
    func noneOrAll() throws {
        let off = try PushConfiguration.fromEnvironment(production: true, [:])
        #expect(off.apns == nil)
        let key = try Self.keyFile()
        let on = try PushConfiguration.fromEnvironment(production: true, [
            "APNS_KEY_FILE": key, "APNS_KEY_ID": "KEY1234567", "APNS_TEAM_ID": "TEAM123456", "APNS_TOPIC": "app.zutto-nikki",
            "APNS_ENDPOINT": "https://127.0.0.1:9443", "APNS_CA_FILE": key,
        ])
        let apns = try #require(on.apns)
        #expect(apns.endpoint?.absoluteString == "https://127.0.0.1:9443")
        #expect(apns.topic == "app.zutto-nikki")
        #expect(apns.requestTimeout <= on.delivery.lease / 2, "a request ends before its lease does")
    }

    @Test("a key that is not a P-256 PEM, or an endpoint that is not https, is refused")
    func badValues() throws {
        let junk = FileManager.default.temporaryDirectory.appendingPathComponent("junk-\(UUID().uuidString).p8").path
        try Data("not a key".utf8).write(to: URL(fileURLWithPath: junk))
        let base = ["APNS_KEY_ID": "KEY1234567", "APNS_TEAM_ID": "TEAM123456", "APNS_TOPIC": "app.zutto-nikki"]
        #expect(throws: ConfigurationError.self) {
            try PushConfiguration.fromEnvironment(production: false, base.merging(["APNS_KEY_FILE": junk]) { $1 })
        }
        #expect(throws: ConfigurationError.self) {
            try PushConfiguration.fromEnvironment(production: false, base.merging(["APNS_KEY_FILE": try Self.keyFile(), "APNS_ENDPOINT": "http://apns.example"]) { $1 })
        }
    }

    @Test("unconfigured, the server is ready and the outbox keeps what it is given")
    func unconfiguredServerIsReady() async throws {
        try await APIHarness.run { api in
            #expect(try await api.call(.get, "/ready").status == .ok)
            let alice = try await api.signIn("alice")
            let bob = try await api.signIn("bob")
            let diary = try await api.createDiary("二人", type: .couple, token: alice.accessToken)
            _ = try await api.join(diary.inviteCode, token: bob.accessToken)
            try await api.call(.put, "/v1/me/devices/\(PushFixture.deviceToken())", token: bob.accessToken, json: #"{"environment":"sandbox"}"#)
            // Queued in the post's own transaction; with APNs unconfigured no delivery runs to take it.
            try await api.post("待ってて", in: diary.id, token: alice.accessToken)
            #expect(try await api.asSuperuser("select count(*) from push_outbox where dead_at is null").first!.decode("count", as: Int.self) == 1)
        }
    }
}
