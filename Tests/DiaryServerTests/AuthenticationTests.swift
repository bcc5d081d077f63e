import DiaryModels
import Foundation
import Hummingbird
import PostgresClient
import Testing
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

@Suite("Sign in with Apple, sessions and token checks")
struct AuthenticationTests {
    static func appleSignIn(_ api: APIHarness, token: String, nonce: String? = nil, displayName: String? = nil) async throws -> APIHarness.Reply {
        try await api.call(.post, "/v1/auth/apple", body: AppleSignInRequest(identityToken: token, nonce: nonce, displayName: displayName))
    }

    @Test("base64url: the same text as Foundation's base64 made URL-safe, and only canonical text decodes")
    func base64URL() {
        var generator = SystemRandomNumberGenerator()
        for length in 0...64 {
            let data = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
            let expected = data.base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(data) == expected)
            #expect(Base64URL.decode(expected) == data)
        }
        for invalid in ["A", "AAAAA", "AA==", "A+AA", "A/AA", "AB", "AAB", "a b", "ず"] {
            #expect(Base64URL.decode(invalid) == nil, "\(invalid)")
        }
        #expect(Base64URL.decode("AA") == Data([0]))
        #expect(Base64URL.decode("AAA") == Data([0, 0]))
    }

    @Test("access claims: our own spelling reads without JSONDecoder, to the same values; any other spelling is left to JSONDecoder")
    func accessClaimsFastPath() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        for _ in 0..<100 {
            let issued = Int.random(in: 0...4_000_000_000)
            let claims = TokenService.AccessClaims(sub: UUID().uuidString.lowercased(), sid: UUID().uuidString.lowercased(), iat: issued, exp: issued + 3600)
            #expect(TokenService.AccessClaims(signedPayload: try encoder.encode(claims)) == claims)
        }
        let other = [
            #"{"sub":"a","sid":"b","iat":1,"exp":2}"#, #"{ "exp":2,"iat":1,"sid":"b","sub":"a"}"#,
            #"{"exp":2,"iat":1,"sid":"b\"","sub":"a"}"#, #"{"exp":2,"iat":1,"sid":"b","sub":"a"} "#,
            #"{"exp":-2,"iat":1,"sid":"b","sub":"a"}"#, #"{"exp":2,"iat":1,"sid":"b","sub":"a""#,
        ]
        for payload in other {
            #expect(TokenService.AccessClaims(signedPayload: Data(payload.utf8)) == nil, "\(payload)")
        }
        // And the token check as a whole still accepts another spelling (an extra claim), through JSONDecoder.
        struct WithAudience: Encodable { var aud = "x", sub: String, sid: String, iat = 0, exp: Int }
        let service = TokenService(key: .init(size: .bits256))
        let identity = TokenService.Identity(userID: UUID(), sessionID: UUID())
        let claims = WithAudience(sub: identity.userID.uuidString.lowercased(), sid: identity.sessionID.uuidString.lowercased(), exp: Int(Date().timeIntervalSince1970) + 60)
        let token = try JSONWebToken.signHS256(claims, key: service.key)
        #expect(try service.verifyAccessToken(token) == identity)
    }

    @Test("a good Apple token signs in, finds the same user again, and keeps the first display name")
    func goodAppleToken() async throws {
        try await APIHarness.run { api in
            let keys = AppleTestKeys.shared
            let first = try await Self.appleSignIn(api, token: try keys.identityToken(nonce: "raw-nonce"), nonce: "raw-nonce", displayName: "さくら")
            #expect(first.status == .ok)
            let session = try first.decode(Session.self)
            #expect(session.user.displayName == "さくら" && session.tokenType == "Bearer" && session.expiresIn > 3500)
            let again = try await Self.appleSignIn(api, token: try keys.identityToken(), displayName: "別の名前")
            #expect(try again.decode(Session.self).user.id == session.user.id)
            #expect(try again.decode(Session.self).user.displayName == "さくら")
            #expect(try await api.call(.get, "/v1/me", token: session.accessToken).status == .ok)
        }
    }

    @Test("bad signature, wrong iss, wrong aud, expired, nonce mismatch, alg none and unknown kid are 401")
    func badAppleTokens() async throws {
        try await APIHarness.run { api in
            let keys = AppleTestKeys.shared
            let cases: [(String, String, String?)] = [
                ("bad signature", try keys.identityToken(signWith: true), nil),
                ("wrong issuer", try keys.identityToken(issuer: "https://evil.example"), nil),
                ("wrong audience", try keys.identityToken(audience: "com.other.app"), nil),
                ("expired", try keys.identityToken(expiresIn: -120), nil),
                ("nonce mismatch", try keys.identityToken(nonce: "expected"), "something else"),
                ("nonce missing", try keys.identityToken(nonce: "expected"), nil),
                ("alg none", try keys.identityToken(alg: "none"), nil),
                ("alg HS256", try keys.identityToken(alg: "HS256"), nil),
                ("unknown kid", try keys.identityToken(kid: "other-kid"), nil),
                ("garbage", "not.a.token", nil),
            ]
            for (name, token, nonce) in cases {
                let reply = try await Self.appleSignIn(api, token: token, nonce: nonce)
                #expect(reply.status == .unauthorized, "\(name): \(reply.status)")
                #expect(reply.code == "unauthorized", "\(name)")
                #expect(reply.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true, "\(name)")
            }
        }
    }

    @Test("refresh rotates; a retry within 10 s returns the same pair; reuse after that revokes the session")
    func refreshRotation() async throws {
        try await APIHarness.run { api in
            let start = try await api.signIn("aiko")
            let rotated = try await api.call(.post, "/v1/auth/refresh", body: RefreshRequest(refreshToken: start.refreshToken))
            #expect(rotated.status == .ok)
            let second = try rotated.decode(Session.self)
            #expect(second.refreshToken != start.refreshToken)

            // The response was lost and the client retries with the old token at once.
            let retried = try await api.call(.post, "/v1/auth/refresh", body: RefreshRequest(refreshToken: start.refreshToken)).decode(Session.self)
            #expect(retried.refreshToken == second.refreshToken)
            #expect(retried.accessToken == second.accessToken)

            // Once the successor itself has been used, the old token is a replay: the session dies.
            let third = try await api.call(.post, "/v1/auth/refresh", body: RefreshRequest(refreshToken: second.refreshToken)).decode(Session.self)
            let reuse = try await api.call(.post, "/v1/auth/refresh", body: RefreshRequest(refreshToken: start.refreshToken))
            #expect(reuse.status == .unauthorized)
            #expect(try await api.call(.post, "/v1/auth/refresh", body: RefreshRequest(refreshToken: third.refreshToken)).status == .unauthorized)
            let me = try await api.call(.get, "/v1/me", token: third.accessToken)
            #expect(me.status == .unauthorized && me.headers[.wwwAuthenticate] != nil)
        }
    }

    @Test("a retry more than 10 s after the rotation is reuse, and revokes the session")
    func retryWindowCloses() async throws {
        try await APIHarness.run { api in
            let start = try await api.signIn("aiko")
            let second = try await api.call(.post, "/v1/auth/refresh", body: RefreshRequest(refreshToken: start.refreshToken)).decode(Session.self)
            try await api.asSuperuser("update refresh_tokens set rotated_at = now() - interval '11 seconds' where rotated_at is not null")
            #expect(try await api.call(.post, "/v1/auth/refresh", body: RefreshRequest(refreshToken: start.refreshToken)).status == .unauthorized)
            #expect(try await api.call(.get, "/v1/me", token: second.accessToken).status == .unauthorized)
        }
    }

    @Test("logout revokes the session: access and refresh tokens both stop working")
    func logout() async throws {
        try await APIHarness.run { api in
            let session = try await api.signIn("aiko")
            let other = try await api.signIn("aiko")
            #expect(try await api.call(.post, "/v1/auth/logout", token: session.accessToken).status == .noContent)
            #expect(try await api.call(.get, "/v1/me", token: session.accessToken).status == .unauthorized)
            #expect(try await api.call(.post, "/v1/auth/refresh", body: RefreshRequest(refreshToken: session.refreshToken)).status == .unauthorized)
            #expect(try await api.call(.get, "/v1/me", token: other.accessToken).status == .ok)
        }
    }

    @Test("forged, expired, alg none, malformed and unknown-session access tokens are 401 with WWW-Authenticate")
    func badAccessTokens() async throws {
        try await APIHarness.run { api in
            let session = try await api.signIn("aiko")
            let parts = session.accessToken.split(separator: ".").map(String.init)
            let claims = try JSONSerialization.jsonObject(with: Base64URL.decode(parts[1])!) as! [String: Any]
            func token(header: String, claims: [String: Any], signature: String) throws -> String {
                Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(try JSONSerialization.data(withJSONObject: claims)) + "." + signature
            }
            var expired = claims
            expired["exp"] = Int(Date().timeIntervalSince1970) - 10
            let key = try TokenService.loadKey(path: nil, dataDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("other-\(UUID())").path, production: false)
            let cases = [
                ("forged signature", parts[0] + "." + parts[1] + "." + Base64URL.encode(Data(repeating: 1, count: 32))),
                ("alg none", try token(header: #"{"alg":"none","typ":"JWT"}"#, claims: claims, signature: "")),
                ("expired", try JSONWebToken.signHS256(TokenService.AccessClaims(sub: claims["sub"] as! String, sid: claims["sid"] as! String, iat: 0, exp: expired["exp"] as! Int), key: key)),
                ("other key", try JSONWebToken.signHS256(TokenService.AccessClaims(sub: claims["sub"] as! String, sid: claims["sid"] as! String, iat: 0, exp: Int(Date().timeIntervalSince1970) + 600), key: key)),
                ("malformed", "abc"),
                ("four parts", session.accessToken + ".x"),
                ("short signature", parts[0] + "." + parts[1] + "." + String(parts[2].dropLast(3))),
                ("empty signature", parts[0] + "." + parts[1] + "."),
            ]
            for (name, token) in cases {
                let reply = try await api.call(.get, "/v1/me", token: token)
                #expect(reply.status == .unauthorized, "\(name)")
                #expect(reply.headers[.wwwAuthenticate]?.hasPrefix("Bearer") == true, "\(name)")
            }
            #expect(try await api.call(.get, "/v1/me").status == .unauthorized)
            // A well-signed token whose session no longer exists.
            #expect(try await api.call(.get, "/v1/me", token: session.accessToken).status == .ok)
            try await api.asSuperuser("delete from sessions")
            let unknown = try await api.call(.get, "/v1/me", token: session.accessToken)
            #expect(unknown.status == .unauthorized && unknown.headers[.wwwAuthenticate] != nil)
        }
    }

    @Test("production refuses dev sign-in, a missing JWT key and a missing audience")
    func productionGuards() throws {
        #expect(throws: ConfigurationError.self) {
            try AuthConfiguration.fromEnvironment(["DIARY_ENV": "production", "DIARY_DEV_AUTH": "1", "APPLE_AUDIENCE": "app"])
        }
        #expect(throws: ConfigurationError.self) { try AuthConfiguration.fromEnvironment(["DIARY_ENV": "production"]) }
        let production = try AuthConfiguration.fromEnvironment(["DIARY_ENV": "production", "APPLE_AUDIENCE": "app"])
        #expect(!production.devSignIn)
        #expect(throws: ConfigurationError.self) {
            try TokenService.loadKey(path: nil, dataDirectory: FileManager.default.temporaryDirectory.path, production: true)
        }
        #expect(try AuthConfiguration.fromEnvironment(["DIARY_DEV_AUTH": "1"]).devSignIn)
    }
}
