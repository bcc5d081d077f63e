import APNSTestServer
import AsyncHTTPClient
import Crypto
import Foundation
import JWTKit
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing

@Suite("APNSStandIn")
struct APNSStandInTests {
    struct ProviderClaims: JWTPayload {
        var iss: String
        var iat: Int
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let topic = "com.example.diary"
    static let deviceToken = String(repeating: "ab", count: 32)

    /// One POST through async-http-client over HTTP/2, as the real client sends it.
    func post(
        to standIn: APNSStandIn,
        client: HTTPClient,
        jwt: String,
        topic: String = Self.topic
    ) async throws -> HTTPClientResponse {
        var request = HTTPClientRequest(url: "\(standIn.endpoint)/3/device/\(Self.deviceToken)")
        request.method = .POST
        request.headers.add(name: "authorization", value: "bearer \(jwt)")
        request.headers.add(name: "apns-push-type", value: "alert")
        request.headers.add(name: "apns-priority", value: "10")
        request.headers.add(name: "apns-topic", value: topic)
        request.headers.add(name: "apns-expiration", value: "\(Int(Date().timeIntervalSince1970) + 24 * 3600)")
        request.body = .bytes(ByteBuffer(string: #"{"aps":{"alert":{"title":"Hi"}}}"#))
        return try await client.execute(request, timeout: .seconds(10))
    }

    func withStandIn(_ body: (APNSStandIn, HTTPClient, String) async throws -> Void) async throws {
        let privateKey = P256.Signing.PrivateKey()
        let standIn = try await APNSStandIn.start(
            teamID: Self.teamID,
            keyID: Self.keyID,
            publicKey: privateKey.publicKey,
            topic: Self.topic
        )
        let keys = await JWTKeyCollection()
            .add(ecdsa: try ES256PrivateKey(backing: privateKey), kid: JWKIdentifier(string: Self.keyID))
        let jwt = try await keys.sign(
            ProviderClaims(iss: Self.teamID, iat: Int(Date().timeIntervalSince1970)),
            kid: JWKIdentifier(string: Self.keyID)
        )
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.file(standIn.caFile)]
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            try await body(standIn, client, jwt)
        } catch {
            try? await client.shutdown()
            try? await standIn.shutdown()
            throw error
        }
        try await client.shutdown()
        try await standIn.shutdown()
    }

    @Test("a valid push over HTTP/2 is answered 200 and recorded")
    func validPush() async throws {
        try await withStandIn { standIn, client, jwt in
            let response = try await post(to: standIn, client: client, jwt: jwt)
            #expect(response.status.code == 200)
            #expect(response.version == .http2)
            #expect(response.headers.first(name: "apns-id") != nil)
            #expect(standIn.violations == [])
            let requests = try await standIn.waitForRequests(count: 1, timeout: .seconds(1))
            #expect(requests.count == 1)
            #expect(requests.first?.deviceToken == Self.deviceToken)
            #expect((requests.first?.payload["aps"] as? [String: Any]) != nil)
            #expect(standIn.providerTokens == [jwt])
        }
    }

    @Test("a wrong topic is refused 400 and recorded as a violation")
    func wrongTopic() async throws {
        try await withStandIn { standIn, client, jwt in
            let response = try await post(to: standIn, client: client, jwt: jwt, topic: "com.example.other")
            #expect(response.status.code == 400)
            let body = try await response.body.collect(upTo: 1 << 16)
            #expect(String(buffer: body) == #"{"reason":"BadTopic"}"#)
            #expect(standIn.requests.isEmpty)
            #expect(standIn.violations.count == 1)
            #expect(standIn.violations.first?.contains("BadTopic") == true)
        }
    }
}
