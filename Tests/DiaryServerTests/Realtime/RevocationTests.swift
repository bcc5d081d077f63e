import DiaryModels
import Foundation
import Testing
import TestSupport

@testable import DiaryCore
@testable import DiaryHTTP

/// A revoked session's socket is written no change made after the revocation committed, and
/// the socket and HTTP answer a token alike (issue 63, part 2).
@Suite("Revoked sessions on sockets")
struct RevocationTests {
    /// No session sweep within a test: what stops delivery must be the delivery's own check.
    static var withoutSweep: ChangeFeed.Options {
        var options = ChangeFeed.Options()
        options.sessionCheckInterval = .seconds(3600)
        return options
    }

    @Test("a session signed out: the next change its diary shares is not written to its socket, which closes with 4401; the others' sockets get it", arguments: ["logout", "account deletion"])
    func revokedSessionGetsNothing(_ revocation: String) async throws {
        try await APIHarness.run(testing: .live, realtime: Self.withoutSweep) { api in
            let port = try #require(api.client.port)
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob"), carol = try await api.signIn("carol")
            let diary = try await api.createDiary("家族", type: .family, token: alice.accessToken)
            for member in [bob, carol] { #expect(try await api.join(diary.inviteCode, token: member.accessToken).status == .ok) }
            let bobs = TestSocket(port: port, token: bob.accessToken), carols = TestSocket(port: port, token: carol.accessToken)
            defer { bobs.close(); carols.close() }
            #expect(try await bobs.nextType() == "ready")
            #expect(try await carols.nextType() == "ready")
            // The feed shares the diary's changes once it knows where the diary stands.
            var attempts = 0
            while api.feed.fannedOutChanges == 0 {
                attempts += 1
                try #require(attempts <= 10, "the feed never shared a change")
                let warmUp = try await api.post("はじめ \(attempts)", in: diary.id, token: alice.accessToken).decode(Entry.self)
                for socket in [bobs, carols] { #expect(try RealtimeTests.entry(try await socket.event(.entryCreated)).id == warmUp.id) }
            }
            let shared = api.feed.fannedOutChanges

            switch revocation {
            case "logout": #expect(try await api.call(.post, "/v1/auth/logout", token: bob.accessToken).status == .noContent)
            default: #expect(try await api.call(.delete, "/v1/me", token: bob.accessToken).status == .noContent)
            }
            let posted = try await api.post("ボブには見せない", in: diary.id, token: alice.accessToken).decode(Entry.self)
            #expect(try RealtimeTests.entry(try await carols.event(.entryCreated)).id == posted.id)
            #expect(try await bobs.closeCode() == .unknown(4401))
            if revocation == "logout" {
                // Read once for the members, whichever socket read it: Bob's own, refused, gives way.
                #expect(api.feed.fannedOutChanges > shared, "the post was shared, so the shared path held Bob's socket back")
            }
            let bobSaw = bobs.frames.withLockedValue { $0 }
            #expect(!bobSaw.contains { $0.contains(posted.id.canonicalText) || $0.contains("ボブには見せない") }, "\(bobSaw)")
        }
    }

    @Test("a session's end reaches its socket by notice: it closes with 4401 with no change after it and no session check", arguments: ["logout", "account deletion", "refresh token reused"])
    func revocationNoticeClosesSocket(_ revocation: String) async throws {
        try await APIHarness.run(testing: .live, realtime: Self.withoutSweep) { api in
            let port = try #require(api.client.port)
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob")
            let socket = TestSocket(port: port, token: alice.accessToken), bobs = TestSocket(port: port, token: bob.accessToken)
            defer { socket.close(); bobs.close() }
            #expect(try await socket.nextType() == "ready")
            #expect(try await bobs.nextType() == "ready")
            switch revocation {
            case "logout":
                #expect(try await api.call(.post, "/v1/auth/logout", token: alice.accessToken).status == .noContent)
            case "account deletion":
                #expect(try await api.call(.delete, "/v1/me", token: alice.accessToken).status == .noContent)
            default:
                // The first token, used again after its successor was: a theft, which ends the session.
                let second = try await api.call(.post, "/v1/auth/refresh", body: RefreshRequest(refreshToken: alice.refreshToken)).decode(Session.self)
                #expect(try await api.call(.post, "/v1/auth/refresh", body: RefreshRequest(refreshToken: second.refreshToken)).status == .ok)
                #expect(try await api.call(.post, "/v1/auth/refresh", body: RefreshRequest(refreshToken: alice.refreshToken)).status == .unauthorized)
            }
            #expect(try await socket.closeCode() == .unknown(4401))
            #expect(!bobs.isFinished, "another user's socket stays")
        }
    }

    @Test("a page read before its session was revoked, with no notice of it: once older than the freshness bound, no more of it is written, and the socket's next read closes it with 4401")
    func stalePageIsNotWritten() async throws {
        try await APIHarness.run(testing: .live, realtime: Self.withoutSweep) { api in
            let port = try #require(api.client.port)
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob")
            let diary = try await api.createDiary("二人", type: .couple, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            let before = TestSocket(port: port, token: bob.accessToken)
            let ready = try #require(try await before.next())
            before.close()
            let cursor = try #require((try JSONSerialization.jsonObject(with: Data(ready.utf8)) as? [String: Any])?["cursor"] as? String)
            // A page of some 2.7 MB, far more than what a reader's small receive buffer, the
            // server's send buffer and its channel hold together.
            let count = RealtimeSocket.Options().pageSize
            for index in 0..<count {
                #expect(try await api.post("\(index) " + String(repeating: "あ", count: 9000), in: diary.id, token: alice.accessToken).status == .created)
            }
            // Bob's socket reads the page; its reader stops after the first change, and the
            // server's writes back up behind it.
            let reader = try RawWebSocket(port: port, path: "/v1/realtime?since=\(cursor)", token: bob.accessToken, receiveBuffer: 4096)
            defer { reader.close() }
            try await reader.read { $0.filter { $0.opcode == 1 }.count >= 2 }
            let readBy = ContinuousClock.now
            // Revoked as an operator would, in SQL, with no notice to the feed, whose session check is off.
            _ = try await api.asSuperuser("update sessions set revoked_at = now() where user_id = \(bob.user.id)")
            // Past the bound, which counts from before the first change reached the reader.
            try await waitUntil("the page is older than the bound") { ContinuousClock.now - readBy > RealtimeSocket.Options().freshness }
            try await reader.read { frames in frames.contains { $0.opcode == 8 } }
            let frames = reader.frames
            let close = try #require(frames.first { $0.opcode == 8 }, "the server closed the socket")
            #expect(close.payload.prefix(2).reduce(0) { $0 << 8 | Int($1) } == 4401)
            let written = frames.filter { $0.opcode == 1 }.count - 1
            #expect(written < count, "\(written) of the page's \(count) changes were written after the bound")
        }
    }

    @Test("an expired access token: the socket's upgrade and an HTTP request answer the same problem, token_expired")
    func expiredTokenAnsweredAlike() async throws {
        try await RealtimeTests.live { api, port in
            let alice = try await api.signIn("alice")
            let tokens = TokenService(key: try TokenService.loadKey(path: nil, dataDirectory: api.dataDirectory, production: false))
            let identity = try await tokens.verifyAccessToken(alice.accessToken)
            let expired = try await tokens.accessToken(for: identity, issuedAt: Date().addingTimeInterval(-TokenService.accessLifetime.totalSeconds - 60))
            let http = try await api.call(.get, "/v1/me", token: expired)
            #expect(http.status == .unauthorized && http.code == "token_expired")
            let upgrade = try await RealtimeTests.rawUpgrade(port: port, token: expired)
            #expect(upgrade.hasPrefix("HTTP/1.1 401") && upgrade.contains(#""code":"token_expired""#), "\(upgrade)")
        }
    }
}
