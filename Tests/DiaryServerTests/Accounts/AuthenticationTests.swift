import Crypto
import DiaryModels
import Foundation
import Hummingbird
import JWTKit
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
    func accessClaimsFastPath() async throws {
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
        struct WithAudience: JWTPayload {
            var aud = "x", sub: String, sid: String, iat = 0, exp: Int
            func verify(using algorithm: some JWTAlgorithm) {}
        }
        let service = TokenService(key: .init(size: .bits256))
        let identity = TokenService.Identity(userID: UUID(), sessionID: UUID())
        let claims = WithAudience(sub: identity.userID.uuidString.lowercased(), sid: identity.sessionID.uuidString.lowercased(), exp: Int(Date().timeIntervalSince1970) + 60)
        let token = try await JWTKeyCollection().add(hmac: HMACKey(key: service.key), digestAlgorithm: .sha256).sign(claims)
        #expect(try await service.verifyAccessToken(token) == identity)
    }

    /// An HS256 signature, made with `key`, over whatever header and claims a test wants.
    static func hmacSigned(header: String, claims: String, key: SymmetricKey) -> String {
        let input = Base64URL.encode(Data(header.utf8)) + "." + Base64URL.encode(Data(claims.utf8))
        return input + "." + Base64URL.encode(Data(HMAC<SHA256>.authenticationCode(for: Data(input.utf8), using: key)))
    }

    @Test("access tokens: only HS256 is accepted, even correctly signed; expiry is judged at `now`; long tokens are refused unread")
    func accessTokenChecks() async throws {
        let key = SymmetricKey(size: .bits256)
        let service = TokenService(key: key)
        let identity = TokenService.Identity(userID: UUID(), sessionID: UUID())
        let issued = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let exp = Int(issued.timeIntervalSince1970) + Int(TokenService.accessLifetime.wholeSeconds)
        let claims = #"{"exp":\#(exp),"iat":\#(Int(issued.timeIntervalSince1970)),"sid":"\#(identity.sessionID.canonicalText)","sub":"\#(identity.userID.canonicalText)"}"#

        // Our own token, and the same claims under another spelling of an HS256 header.
        let token = try await service.accessToken(for: identity, issuedAt: issued)
        #expect(token == Self.hmacSigned(header: #"{"alg":"HS256","typ":"JWT"}"#, claims: claims, key: key))
        #expect(try await service.verifyAccessToken(token) == identity)
        #expect(try await service.verifyAccessToken(Self.hmacSigned(header: #"{"typ":"JWT", "alg":"HS256"}"#, claims: claims, key: key)) == identity)

        // Any other alg is refused, though the HMAC over header and claims is good.
        for alg in ["none", "None", "RS256", "HS384", "HS512", "ES256", "PS256", "hs256", ""] {
            let forged = Self.hmacSigned(header: #"{"alg":"\#(alg)","typ":"JWT"}"#, claims: claims, key: key)
            await #expect(throws: TokenService.Failure.self, "\(alg)") { try await service.verifyAccessToken(forged) }
        }
        let noAlg = Self.hmacSigned(header: #"{"typ":"JWT"}"#, claims: claims, key: key)
        await #expect(throws: TokenService.Failure.self) { try await service.verifyAccessToken(noAlg) }
        // alg none with no signature at all.
        let unsigned = Base64URL.encode(Data(#"{"alg":"none","typ":"JWT"}"#.utf8)) + "." + Base64URL.encode(Data(claims.utf8)) + "."
        await #expect(throws: TokenService.Failure.self) { try await service.verifyAccessToken(unsigned) }

        // Expiry against the `now` given: valid to the second before `exp`, not at it.
        let expiry = Date(timeIntervalSince1970: TimeInterval(exp))
        #expect(try await service.verifyAccessToken(token, now: expiry.addingTimeInterval(-1)).expiresAt == expiry)
        await #expect(throws: TokenService.Failure.self) { try await service.verifyAccessToken(token, now: expiry) }
        await #expect(throws: TokenService.Failure.self) { try await service.verifyAccessToken(token, now: expiry.addingTimeInterval(3600)) }

        // A correctly signed token one byte over the length bound is refused; one at it is read.
        func padded(_ count: Int) -> String {
            let claims = #"{"exp":\#(exp),"iat":0,"pad":"\#(String(repeating: "x", count: count))","sid":"\#(identity.sessionID.canonicalText)","sub":"\#(identity.userID.canonicalText)"}"#
            return Self.hmacSigned(header: #"{"alg":"HS256","typ":"JWT"}"#, claims: claims, key: key)
        }
        var padding = TokenService.maximumTokenLength * 3 / 4 - 300
        while padded(padding + 1).utf8.count <= TokenService.maximumTokenLength { padding += 1 }
        let longest = padded(padding), tooLong = padded(padding + 1)
        #expect(longest.utf8.count <= TokenService.maximumTokenLength && tooLong.utf8.count > TokenService.maximumTokenLength)
        #expect(try await service.verifyAccessToken(longest) == identity)
        await #expect(throws: TokenService.Failure.self) { try await service.verifyAccessToken(tooLong) }
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

    @Test("a returning user's sign-in, by Apple or dev, writes no row of users: on Citus that write needs every node")
    func returningSignInOnlyReads() async throws {
        try await APIHarness.run { api in
            let keys = AppleTestKeys.shared
            let apple = try await Self.appleSignIn(api, token: try keys.identityToken(), displayName: "さくら").decode(Session.self)
            let dev = try await api.signIn("returning")
            func versions() async throws -> [String] {
                try await api.asSuperuser("select xmin::text as version from users where id in (\(apple.user.id), \(dev.user.id)) order by id")
                    .map { try $0.decode("version", as: String.self) }
            }
            let before = try await versions()
            #expect(try await Self.appleSignIn(api, token: try keys.identityToken(), displayName: "別の名前").status == .ok)
            #expect(try await api.signIn("returning").user.id == dev.user.id)
            #expect(try await versions() == before)
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
            let key = try TokenService.loadKey(path: nil, dataDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("other-\(UUID())").path, production: false)
            let serverKey = try TokenService.loadKey(path: nil, dataDirectory: api.dataDirectory, production: false)
            let server = TokenService(key: serverKey)
            let identity = try await server.verifyAccessToken(session.accessToken)
            let claimsJSON = String(decoding: try #require(Base64URL.decode(parts[1])), as: UTF8.self)
            let cases = [
                ("forged signature", parts[0] + "." + parts[1] + "." + Base64URL.encode(Data(repeating: 1, count: 32))),
                ("alg none", try token(header: #"{"alg":"none","typ":"JWT"}"#, claims: claims, signature: "")),
                ("alg none, signed", Self.hmacSigned(header: #"{"alg":"none","typ":"JWT"}"#, claims: claimsJSON, key: serverKey)),
                ("alg RS256, signed", Self.hmacSigned(header: #"{"alg":"RS256","typ":"JWT"}"#, claims: claimsJSON, key: serverKey)),
                ("expired", try await server.accessToken(for: identity, issuedAt: Date().addingTimeInterval(-TokenService.accessLifetime.totalSeconds - 10))),
                ("expired, other key", try await TokenService(key: key).accessToken(for: identity, issuedAt: Date().addingTimeInterval(-TokenService.accessLifetime.totalSeconds - 10))),
                ("other key", try await TokenService(key: key).accessToken(for: identity, issuedAt: Date())),
                ("too long", Self.hmacSigned(header: #"{"alg":"HS256","typ":"JWT"}"#, claims: String(claimsJSON.dropLast()) + #","pad":""# + String(repeating: "x", count: TokenService.maximumTokenLength) + #""}"#, key: serverKey)),
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
