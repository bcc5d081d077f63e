import APNSClient
import APNSTestServer
import Crypto
import Foundation
import PostgresClient
import TestSupport
@testable import DiaryCore

/// An APNs stand-in and the provider key it trusts, with the settings that point a server at it.
struct PushFixture: Sendable {
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let topic = "app.zutto-nikki.tests"

    let standIn: APNSStandIn
    let keyFile: String
    let apns: APNSConfiguration

    static func start() async throws -> PushFixture {
        let key = P256.Signing.PrivateKey()
        let standIn = try await APNSStandIn.start(teamID: teamID, keyID: keyID, publicKey: key.publicKey, topic: topic)
        let keyFile = FileManager.default.temporaryDirectory.appendingPathComponent("apns-\(UUID().uuidString).p8").path
        try Data(key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyFile))
        let apns = APNSConfiguration(
            privateKeyPEM: key.pemRepresentation, keyID: keyID, teamID: teamID, topic: topic,
            endpoint: URL(string: standIn.endpoint)!, extraTrustedCAFile: standIn.caFile)
        return PushFixture(standIn: standIn, keyFile: keyFile, apns: apns)
    }

    /// `serve`'s settings for this stand-in.
    var environment: [String: String] {
        ["APNS_KEY_FILE": keyFile, "APNS_KEY_ID": Self.keyID, "APNS_TEAM_ID": Self.teamID, "APNS_TOPIC": Self.topic,
         "APNS_ENDPOINT": standIn.endpoint, "APNS_CA_FILE": standIn.caFile]
    }

    /// A fresh device token: 64 lower-case hex digits.
    static func deviceToken() -> String {
        (UUID().uuidString + UUID().uuidString).replacingOccurrences(of: "-", with: "").lowercased()
    }

    /// Quick retries and polls, for tests that wait on them.
    static var quickOptions: PushDelivery.Options {
        var options = PushDelivery.Options()
        options.pollInterval = .milliseconds(100)
        options.backoff = Backoff(base: .milliseconds(200), cap: .seconds(2), jitter: 0.5...1.0)
        options.configurationHold = .milliseconds(300)
        options.lease = .seconds(5)
        return options
    }

    /// Runs a delivery of the outbox in `database` to the stand-in while `body` runs.
    func delivering<T: Sendable>(
        pool: PostgresPool, listen: PostgresConfiguration, options: PushDelivery.Options = PushFixture.quickOptions,
        _ body: @Sendable () async throws -> T
    ) async throws -> T {
        let delivery = PushDelivery(pool: pool, listenConfiguration: listen, apns: apns, options: options, logger: TestDatabase.logger)
        let task = Task { await delivery.run() }
        defer { task.cancel() }
        let result = try await body()
        task.cancel()
        await task.value
        return result
    }
}

extension APNSStandIn.Request {
    var text: String { String(decoding: body, as: UTF8.self) }
}
