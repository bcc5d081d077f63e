import AppleIDClient
import AppleTestServer
import Crypto
import DiaryModels
import Foundation
import HummingbirdTesting
import PostgresClient
import Testing
@testable import DiaryCore
@testable import DiaryHTTP

/// The application with Sign in with Apple's REST API pointed at a local stand-in
/// (`AppleIDStandIn`: HTTPS, HTTP/2), which serves Apple's test keys and checks every
/// client secret as Apple does.
struct AppleFixture: Sendable {
    static let teamID = "TEAM123456"
    static let keyID = "SIWAKEY001"

    let standIn: AppleIDStandIn
    let api: APIHarness

    /// On a fresh database, or on `database` (migrated already; `citus` for a coordinator).
    static func run(
        testing: TestingSetup = .router, on database: PostgresConfiguration? = nil, citus: Bool = false,
        realtime: ChangeFeed.Options = ChangeFeed.Options(), _ body: @Sendable (AppleFixture) async throws -> Void
    ) async throws {
        let key = P256.Signing.PrivateKey()
        let jwks = try Data(contentsOf: URL(fileURLWithPath: AppleTestKeys.shared.jwksPath))
        let standIn = try await AppleIDStandIn.start(
            teamID: teamID, clientID: AppleTestKeys.audience, keyID: keyID, clientSecretKey: key.publicKey, jwks: jwks)
        var apple = AppleConfiguration(
            authURL: standIn.endpoint,
            credentials: AppleIDCredentials(teamID: teamID, clientID: AppleTestKeys.audience, keyID: keyID, privateKeyPEM: key.pemRepresentation),
            caFile: standIn.caFile)
        apple.revocations.pollInterval = .milliseconds(200)
        apple.revocations.backoff = Backoff(base: .milliseconds(200), cap: .milliseconds(500), jitter: 1.0...1.2)
        do {
            // Apple's keys come from the stand-in too, through the shared HTTP client.
            func serve(_ database: PostgresConfiguration) async throws {
                try await APIHarness.run(
                    on: database, testing: testing, apple: apple, jwksURL: standIn.endpoint.appendingPathComponent("auth/keys"), citus: citus,
                    realtime: realtime
                ) { api in try await body(AppleFixture(standIn: standIn, api: api)) }
            }
            if let database { try await serve(database) } else { try await MigratedTemplate.withDatabase(serve) }
        } catch {
            try? await standIn.shutdown()
            throw error
        }
        try await standIn.shutdown()
        #expect(standIn.violations.isEmpty, "the stand-in saw requests Apple would refuse: \(standIn.violations)")
    }

    /// Signs `subject` in with an identity token and, when given, an authorization code.
    func signIn(_ subject: String, code: String? = nil) async throws -> APIHarness.Reply {
        try await api.call(.post, "/v1/auth/apple", body: AppleSignInRequest(
            identityToken: try AppleTestKeys.shared.identityToken(subject: subject), authorizationCode: code))
    }

    /// The stored Apple token of the account: its id, client id and sealed bytes (hex).
    func storedToken(of user: UUID) async throws -> (id: UUID, clientID: String, sealedHex: String)? {
        let rows = try await api.asSuperuser("select token_id, client_id, encode(sealed, 'hex') as sealed from apple_tokens where user_id = \(user)")
        guard let row = rows.first else { return nil }
        return (try row.decode("token_id"), try row.decode("client_id"), try row.decode("sealed"))
    }

    /// The revocation queue's row for a token: state, attempts, whether the sealed token is still kept.
    func revocation(_ tokenID: UUID) async throws -> (state: String, attempts: Int, sealed: Bool, lastError: String?)? {
        let rows = try await api.asSuperuser(
            "select state, attempts, sealed is not null as sealed, last_error from apple_revocations where token_id = \(tokenID)")
        guard let row = rows.first else { return nil }
        return (try row.decode("state"), try row.decode("attempts"), try row.decode("sealed"), try row.decode("last_error"))
    }

    /// A server-to-server notification as Apple signs it; `events` is JSON text.
    static func notification(
        type: String, subject: String, email: String? = nil, jti: String = UUID().uuidString, audience: String = AppleTestKeys.audience,
        issuedAt: Date = Date(), signWith other: Bool = false
    ) throws -> String {
        var event: [String: Any] = ["type": type, "sub": subject, "event_time": Int(Date().timeIntervalSince1970 * 1000)]
        if let email { event["email"] = email; event["is_private_email"] = "true" }
        let events = String(decoding: try JSONSerialization.data(withJSONObject: event), as: UTF8.self)
        let claims: [String: Any] = [
            "iss": AppleIdentityVerifier.issuer, "aud": audience, "iat": Int(issuedAt.timeIntervalSince1970), "jti": jti, "events": events,
        ]
        return try AppleTestKeys.shared.signed(claims, signWith: other)
    }

    func notify(_ payload: String) async throws -> APIHarness.Reply {
        try await api.call(.post, "/v1/webhooks/apple", json: String(decoding: try JSONSerialization.data(withJSONObject: ["payload": payload]), as: UTF8.self))
    }
}
