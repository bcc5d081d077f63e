@testable import DiaryKit
import Foundation
import Testing

/// Tokens: an expired access token refreshed once for many concurrent calls, and a session
/// the server ended forgotten cleanly.
@Suite("Sessions and tokens")
struct SessionTests {
    @Test("concurrent calls that find the token expired share one refresh, and all succeed")
    func concurrentRefresh() async throws {
        try await LiveServer.with { server in
            let storage = InMemorySessionStorage()
            try await server.client(storage: storage).signInForDevelopment(name: "aiko")
            let signedIn = try #require(await storage.loadSession())
            // The server's own key signs a token that expired an hour ago; the client is told it
            // is good for an hour, so only the server's 401 token_expired can reveal it.
            let expired = try ExpiredToken.mint(like: signedIn.accessToken, key: server.jwtKey)
            let stale = StoredSession(accessToken: expired, refreshToken: signedIn.refreshToken,
                                      accessTokenExpiresAt: Date().addingTimeInterval(3600), userID: signedIn.userID)
            let client = server.client(storage: InMemorySessionStorage(session: stale))
            let names = try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<8 { group.addTask { try await client.me().displayName } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(names == Array(repeating: "aiko", count: 8))
            #expect(await client.authority.refreshCount == 1)
            let renewed = try #require(await client.authority.current())
            #expect(renewed.accessToken != expired && renewed.refreshToken != signedIn.refreshToken)
        }
    }

    @Test("a proactive refresh happens before the expiry the server gave")
    func proactiveRefresh() async throws {
        try await LiveServer.with { server in
            let storage = InMemorySessionStorage()
            try await server.client(storage: storage).signInForDevelopment(name: "aiko")
            var session = try #require(await storage.loadSession())
            session.accessTokenExpiresAt = Date().addingTimeInterval(5)
            let client = server.client(storage: InMemorySessionStorage(session: session))
            _ = try await client.me()
            #expect(await client.authority.refreshCount == 1)
        }
    }

    @Test("a session ended elsewhere is forgotten, reported once, and calls throw sessionEnded")
    func sessionEndedElsewhere() async throws {
        try await LiveServer.with { server in
            let storage = InMemorySessionStorage()
            let phone = server.client(storage: storage)
            try await phone.signInForDevelopment(name: "aiko")
            let copy = try #require(await storage.loadSession())
            let tablet = server.client(storage: InMemorySessionStorage(session: copy))
            let ended = Counter()
            await tablet.onSessionEnded { ended.increment() }

            try await phone.signOut()
            #expect(await phone.isSignedIn == false)
            await #expect(throws: DiaryError.self) { _ = try await phone.me() }

            do {
                _ = try await tablet.me()
                Issue.record("a revoked session still answered")
            } catch DiaryError.sessionEnded {
            }
            #expect(ended.value == 1)
            #expect(await tablet.isSignedIn == false)
            do {
                _ = try await tablet.me()
                Issue.record("a forgotten session still answered")
            } catch DiaryError.notSignedIn {
            }
        }
    }

    @Test("a refresh token the server refuses ends the session instead of failing every call")
    func refusedRefreshToken() async throws {
        try await LiveServer.with { server in
            let storage = InMemorySessionStorage()
            try await server.client(storage: storage).signInForDevelopment(name: "aiko")
            let signedIn = try #require(await storage.loadSession())
            let expired = try ExpiredToken.mint(like: signedIn.accessToken, key: server.jwtKey)
            let broken = StoredSession(accessToken: expired, refreshToken: "spent-or-forged",
                                       accessTokenExpiresAt: Date().addingTimeInterval(3600), userID: signedIn.userID)
            let client = server.client(storage: InMemorySessionStorage(session: broken))
            do {
                _ = try await client.diaries()
                Issue.record("a call with a refused refresh token succeeded")
            } catch DiaryError.sessionEnded {
            }
            #expect(await client.isSignedIn == false)
        }
    }
}

/// Counts from any task.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var value: Int { lock.withLock { count } }
    func increment() { lock.withLock { count += 1 } }
}

/// An HS256 access token like the server's, signed with its key, that expired an hour ago.
/// HMAC comes from the openssl command: Foundation has none on Linux, and the tests add no
/// crypto package.
enum ExpiredToken {
    static func mint(like token: String, key: String) throws -> String {
        let parts = token.split(separator: ".")
        var payload = String(parts[1]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        payload += String(repeating: "=", count: (4 - payload.count % 4) % 4)
        let claims = try JSONSerialization.jsonObject(with: try #require(Data(base64Encoded: payload))) as! [String: Any]
        let now = Int(Date().timeIntervalSince1970)
        let expiredClaims: [String: Any] = ["sub": claims["sub"]!, "sid": claims["sid"]!, "iat": now - 7200, "exp": now - 3600]
        let header = base64URL(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let body = base64URL(try JSONSerialization.data(withJSONObject: expiredClaims, options: .sortedKeys))
        let signingInput = "\(header).\(body)"
        let input = FileManager.default.temporaryDirectory.appendingPathComponent("jwt-\(UUID().uuidString)")
        try Data(signingInput.utf8).write(to: input)
        defer { try? FileManager.default.removeItem(at: input) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "dgst", "-sha256", "-mac", "HMAC", "-macopt", "key:\(key)", "-binary", input.path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let signature = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, signature.count == 32 else { throw LiveServerError("openssl could not sign") }
        return "\(signingInput).\(base64URL(signature))"
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
