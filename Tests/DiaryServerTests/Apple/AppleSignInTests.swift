import AppleIDClient
import Crypto
import DiaryModels
import Foundation
import Hummingbird
import Testing
@testable import DiaryCore
@testable import DiaryHTTP

/// Sign in with Apple's contract: the nonce on both sides or neither, a refresh token that
/// cannot be one, and the authorization code exchanged for a token kept sealed.
@Suite("Sign in with Apple: nonce, refresh, code exchange")
struct AppleSignInTests {
    static func appleSignIn(_ api: APIHarness, token: String, nonce: String?) async throws -> APIHarness.Reply {
        try await api.call(.post, "/v1/auth/apple", body: AppleSignInRequest(identityToken: token, nonce: nonce))
    }

    @Test("a nonce on one side only is 401; on both it must match; on neither the token is accepted")
    func nonceRules() async throws {
        try await APIHarness.run { api in
            let keys = AppleTestKeys.shared
            let noNonceInToken = try await Self.appleSignIn(api, token: try keys.identityToken(subject: "n1"), nonce: "raw-nonce")
            #expect(noNonceInToken.status == .unauthorized)
            #expect(noNonceInToken.code == "unauthorized")
            let noNonceInRequest = try await Self.appleSignIn(api, token: try keys.identityToken(subject: "n2", nonce: "raw-nonce"), nonce: nil)
            #expect(noNonceInRequest.status == .unauthorized)
            let mismatch = try await Self.appleSignIn(api, token: try keys.identityToken(subject: "n3", nonce: "raw-nonce"), nonce: "other")
            #expect(mismatch.status == .unauthorized)
            #expect(try await Self.appleSignIn(api, token: try keys.identityToken(subject: "n4", nonce: "raw-nonce"), nonce: "raw-nonce").status == .ok)
            #expect(try await Self.appleSignIn(api, token: try keys.identityToken(subject: "n5"), nonce: nil).status == .ok)
            let accounts = try await api.asSuperuser("select count(*)::int as n from users where apple_sub in ('n1', 'n2', 'n3')")
            #expect(try accounts.first?.decode("n", as: Int.self) == 0)
        }
    }

    @Test("a refresh token that cannot be one is 401 unauthorized; only a missing or non-string field is 400")
    func refreshGarbage() async throws {
        try await APIHarness.run { api in
            let session = try await api.signIn("alice")
            for garbage in [session.accessToken, String(repeating: "x", count: 129), "", String(repeating: "é", count: 100)] {
                let reply = try await api.call(.post, "/v1/auth/refresh", body: RefreshRequest(refreshToken: garbage))
                #expect(reply.status == .unauthorized, "\(garbage.prefix(20))… answered \(reply.status)")
                #expect(reply.code == "unauthorized")
            }
            #expect(try await api.call(.post, "/v1/auth/refresh", json: "{}").status == .badRequest)
            #expect(try await api.call(.post, "/v1/auth/refresh", json: #"{"refreshToken": 42}"#).status == .badRequest)
            // The session is untouched by all of that.
            #expect(try await api.call(.post, "/v1/auth/refresh", body: RefreshRequest(refreshToken: session.refreshToken)).status == .ok)
        }
    }

    @Test("the code is exchanged with a valid client secret; the refresh token is kept sealed, bound to its row")
    func codeExchange() async throws {
        try await AppleFixture.run { apple in
            let code = apple.standIn.issueCode(subject: "apple-ex-1")
            let reply = try await apple.signIn("apple-ex-1", code: code)
            #expect(reply.status == .ok)
            let user = try reply.decode(Session.self).user.id
            let exchanges = apple.standIn.calls.filter { $0.path == "/auth/token" }
            #expect(exchanges.count == 1)
            #expect(exchanges.first?.status == 200)
            #expect(exchanges.first?.form["grant_type"] == "authorization_code")
            #expect(exchanges.first?.form["client_id"] == AppleTestKeys.audience)
            // The keys were fetched over HTTPS from the stand-in, not read from a file.
            #expect(apple.standIn.calls.contains { $0.path == "/auth/keys" })

            let issued = try #require(apple.standIn.issuedRefreshTokens.first { $0.value == "apple-ex-1" }?.key)
            let stored = try #require(try await apple.storedToken(of: user))
            #expect(stored.clientID == AppleTestKeys.audience)
            // Neither in clear nor base64 anywhere in the row.
            #expect(!stored.sealedHex.contains(Data(issued.utf8).map { String(format: "%02x", $0) }.joined()))
            let dump = try await apple.api.asSuperuser("select t::text || encode(t.sealed, 'escape') || encode(t.sealed, 'base64') as row from apple_tokens t")
            let row = try #require(try dump.first?.decode("row", as: String.self))
            #expect(!row.contains(issued) && !row.contains(Data(issued.utf8).base64EncodedString().prefix(20)))
            // It opens with the server's key, and only as the row it was sealed for.
            let key = try SecretKeyFile.secrets.load(path: nil, dataDirectory: apple.api.dataDirectory, production: false)
            let vault = AppleTokenVault(key: key)
            let bytes = try #require(Data(hex: stored.sealedHex))
            #expect(try vault.open(.init(tokenID: stored.id, bytes: bytes)) == issued)
            #expect(throws: (any Error).self) { try vault.open(.init(tokenID: UUID(), bytes: bytes)) }

            // A reused code is refused by Apple: the sign-in still works, the stored token stays.
            #expect(try await apple.signIn("apple-ex-1", code: code).status == .ok)
            #expect(try await apple.storedToken(of: user)?.id == stored.id)
        }
    }

    @Test("a failed exchange does not fail the sign-in; the next sign-in with a code tries again")
    func failedExchange() async throws {
        try await AppleFixture.run { apple in
            apple.standIn.setDown(true)
            let first = try await apple.signIn("apple-ex-2", code: apple.standIn.issueCode(subject: "apple-ex-2"))
            #expect(first.status == .ok)
            let user = try first.decode(Session.self).user.id
            #expect(try await apple.storedToken(of: user) == nil)
            apple.standIn.setDown(false)
            // Without a code nothing is tried.
            let before = apple.standIn.calls.filter { $0.path == "/auth/token" }.count
            #expect(try await apple.signIn("apple-ex-2").status == .ok)
            #expect(apple.standIn.calls.filter { $0.path == "/auth/token" }.count == before)
            // A code Apple issued for someone else is not kept under this account.
            #expect(try await apple.signIn("apple-ex-2", code: apple.standIn.issueCode(subject: "someone-else")).status == .ok)
            #expect(try await apple.storedToken(of: user) == nil)
            #expect(try await apple.signIn("apple-ex-2", code: apple.standIn.issueCode(subject: "apple-ex-2")).status == .ok)
            #expect(try await apple.storedToken(of: user) != nil)
        }
    }

    @Test("without Sign in with Apple's key, codes are ignored and sign-in works")
    func codesIgnoredWithoutKey() async throws {
        try await APIHarness.run { api in
            let reply = try await api.call(.post, "/v1/auth/apple", body: AppleSignInRequest(
                identityToken: try AppleTestKeys.shared.identityToken(subject: "apple-nokey"), authorizationCode: "c.some-code"))
            #expect(reply.status == .ok)
            let stored = try await api.asSuperuser("select count(*)::int as n from apple_tokens")
            #expect(try stored.first?.decode("n", as: Int.self) == 0)
        }
    }
}

extension Data {
    init?(hex: String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(hex.count / 2)
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) ?? hex.endIndex
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.init(bytes)
    }
}
