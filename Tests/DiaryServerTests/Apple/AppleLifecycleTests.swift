import AppleTestServer
import DiaryModels
import Foundation
import Hummingbird
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP

/// Account deletion revokes the Apple token after the deletion commits, however Apple is
/// doing; Apple's notifications act on the account once each, and only when Apple signed them.
@Suite("Sign in with Apple: revocation and notifications")
struct AppleLifecycleTests {
    /// Signs in with a code and returns the session and the stored token's id.
    static func signedInWithToken(_ apple: AppleFixture, subject: String) async throws -> (Session, UUID, String) {
        let reply = try await apple.signIn(subject, code: apple.standIn.issueCode(subject: subject))
        let session = try reply.decode(Session.self)
        let stored = try #require(try await apple.storedToken(of: session.user.id))
        let issued = try #require(apple.standIn.issuedRefreshTokens.first { $0.value == subject }?.key)
        return (session, stored.id, issued)
    }

    @Test("deleting the account revokes its Apple token after the deletion commits")
    func deletionRevokes() async throws {
        try await AppleFixture.run { apple in try await Self.deletionRevokes(apple, subject: "apple-del-1") }
    }

    /// The revocation worker's path, on whatever database the fixture serves (also the cluster: CitusClusterTests).
    static func deletionRevokes(_ apple: AppleFixture, subject: String) async throws {
        let (session, tokenID, issued) = try await Self.signedInWithToken(apple, subject: subject)
        #expect(try await apple.api.call(.delete, "/v1/me", token: session.accessToken).status == .noContent)
        let revokes = try await apple.standIn.waitForCalls(path: "/auth/revoke", count: 1, timeout: .seconds(10))
        #expect(revokes.first?.form["token"] == issued)
        #expect(revokes.first?.form["token_type_hint"] == "refresh_token")
        #expect(apple.standIn.revokedTokens == [issued])
        // One client secret served the exchange and the revocation.
        #expect(Set(apple.standIn.clientSecrets).count == 1)
        try await waitUntil { try await apple.revocation(tokenID)?.state == "revoked" }
        // Once revoked, the sealed token is gone too.
        #expect(try await apple.revocation(tokenID)?.sealed == false)
        #expect(try await apple.api.call(.get, "/v1/me", token: session.accessToken).status == .unauthorized)
    }

    @Test("with Apple down the deletion still succeeds at once; the revocation is retried until Apple is back")
    func deletionWithAppleDown() async throws {
        try await AppleFixture.run { apple in
            let (session, tokenID, issued) = try await Self.signedInWithToken(apple, subject: "apple-del-2")
            apple.standIn.setDown(true)
            #expect(try await apple.api.call(.delete, "/v1/me", token: session.accessToken).status == .noContent)
            let gone = try await apple.api.asSuperuser("select count(*)::int as n from users where apple_sub = 'apple-del-2'")
            #expect(try gone.first?.decode("n", as: Int.self) == 0)
            // Tried, refused, and kept for later.
            try await waitUntil { (try await apple.revocation(tokenID)?.attempts ?? 0) >= 2 }
            let waiting = try #require(try await apple.revocation(tokenID))
            #expect(waiting.state == "pending")
            #expect(waiting.sealed)
            #expect(waiting.lastError?.contains("503") == true)
            #expect(apple.standIn.revokedTokens.isEmpty)
            apple.standIn.setDown(false)
            try await waitUntil { try await apple.revocation(tokenID)?.state == "revoked" }
            #expect(apple.standIn.revokedTokens == [issued])
        }
    }

    @Test("a revocation still failing 7 days after it was queued is recorded as failed, its token dropped")
    func revocationGivesUp() async throws {
        try await AppleFixture.run { apple in
            let (session, tokenID, issued) = try await Self.signedInWithToken(apple, subject: "apple-del-3")
            apple.standIn.setDown(true)
            #expect(try await apple.api.call(.delete, "/v1/me", token: session.accessToken).status == .noContent)
            try await waitUntil { (try await apple.revocation(tokenID)?.attempts ?? 0) >= 1 }
            try await apple.api.asSuperuser("update apple_revocations set queued_at = now() - interval '7 days 1 minute' where token_id = \(tokenID)")
            try await waitUntil { try await apple.revocation(tokenID)?.state == "failed" }
            #expect(try await apple.revocation(tokenID)?.sealed == false)
            func revokeCalls() -> Int { apple.standIn.calls.filter { $0.path == "/auth/revoke" && $0.form["token"] == issued }.count }
            let calls = revokeCalls()
            // A revocation queued after the failure: once it has been tried, the worker has
            // claimed again since, and passed the failed one over.
            apple.standIn.setDown(false)
            let (later, laterTokenID, _) = try await Self.signedInWithToken(apple, subject: "apple-del-3-later")
            apple.standIn.setDown(true)
            #expect(try await apple.api.call(.delete, "/v1/me", token: later.accessToken).status == .noContent)
            try await waitUntil { (try await apple.revocation(laterTokenID)?.attempts ?? 0) >= 1 }
            #expect(revokeCalls() == calls, "a failed revocation is not tried again")
        }
    }

    @Test("consent-revoked ends every session of the account at once, and its open sockets with 4401 by the revocation's notice, with no session check")
    func consentRevoked() async throws {
        try await AppleFixture.run(testing: .live, realtime: RevocationTests.withoutSweep) { apple in
            let port = try #require(apple.api.client.port)
            let (first, _, _) = try await Self.signedInWithToken(apple, subject: "apple-n-1")
            let second = try await apple.signIn("apple-n-1").decode(Session.self)
            let socket = TestSocket(port: port, token: first.accessToken)
            defer { socket.close() }
            #expect(try await socket.nextType() == "ready")
            let reply = try await apple.notify(try AppleFixture.notification(type: "consent-revoked", subject: "apple-n-1"))
            #expect(reply.status == .ok)
            #expect(reply.text.contains("sessions_revoked"))
            for session in [first, second] {
                #expect(try await apple.api.call(.get, "/v1/me", token: session.accessToken).status == .unauthorized)
                #expect(try await apple.api.call(.post, "/v1/auth/refresh", body: RefreshRequest(refreshToken: session.refreshToken)).status == .unauthorized)
            }
            #expect(try await socket.closeCode() == .unknown(4401))
            // The account stays; Apple's consent, and so its token, is gone.
            let rows = try await apple.api.asSuperuser("select (select count(*) from users where apple_sub = 'apple-n-1')::int as users, (select count(*) from apple_tokens)::int as tokens")
            #expect(try rows.first?.decode("users", as: Int.self) == 1)
            #expect(try rows.first?.decode("tokens", as: Int.self) == 0)
        }
    }

    @Test("account-delete deletes the account as DELETE /v1/me does, its diaries and entries included")
    func accountDelete() async throws {
        try await AppleFixture.run { apple in
            let (session, tokenID, issued) = try await Self.signedInWithToken(apple, subject: "apple-n-2")
            let diary = try await apple.api.createDiary("ふたり", type: .couple, token: session.accessToken)
            #expect(try await apple.api.post("消える日記", in: diary.id, token: session.accessToken).status == .created)
            let reply = try await apple.notify(try AppleFixture.notification(type: "account-delete", subject: "apple-n-2"))
            #expect(reply.status == .ok)
            #expect(reply.text.contains("account_deleted"))
            let rows = try await apple.api.asSuperuser("""
                select (select count(*) from users where apple_sub = 'apple-n-2')::int as users,
                       (select count(*) from diaries where id = \(diary.id))::int as diaries
                """)
            #expect(try rows.first?.decode("users", as: Int.self) == 0)
            #expect(try rows.first?.decode("diaries", as: Int.self) == 0)
            #expect(try await apple.api.call(.get, "/v1/me", token: session.accessToken).status == .unauthorized)
            try await waitUntil { try await apple.revocation(tokenID)?.state == "revoked" }
            #expect(apple.standIn.revokedTokens == [issued])
        }
    }

    @Test("email-disabled and email-enabled update the stored email")
    func emailEvents() async throws {
        try await AppleFixture.run { apple in
            let user = try await apple.signIn("apple-n-3").decode(Session.self).user.id
            func email() async throws -> String? {
                try await apple.api.asSuperuser("select email from users where id = \(user)").first?.decode("email", as: String?.self)
            }
            #expect(try await email() == "apple-n-3@privaterelay.example")
            let disabled = try await apple.notify(try AppleFixture.notification(type: "email-disabled", subject: "apple-n-3", email: "apple-n-3@privaterelay.example"))
            #expect(disabled.status == .ok)
            #expect(try await email() == nil)
            let enabled = try await apple.notify(try AppleFixture.notification(type: "email-enabled", subject: "apple-n-3", email: "relay-2@privaterelay.example"))
            #expect(enabled.status == .ok)
            #expect(try await email() == "relay-2@privaterelay.example")
        }
    }

    @Test("a notification is applied once by jti; an unknown subject is 200; a forged or foreign one is 400 and changes nothing")
    func replayAndForgery() async throws {
        try await AppleFixture.run { apple in
            let user = try await apple.signIn("apple-n-4").decode(Session.self).user.id
            let enable = try AppleFixture.notification(type: "email-enabled", subject: "apple-n-4", email: "first@privaterelay.example", jti: "jti-replayed")
            #expect(try await apple.notify(enable).text.contains("email_updated"))
            try await apple.api.asSuperuser("update users set email = 'changed-since@example.com' where id = \(user)")
            let again = try await apple.notify(enable)
            #expect(again.status == .ok)
            #expect(again.text.contains("duplicate"))
            let email = try await apple.api.asSuperuser("select email from users where id = \(user)").first?.decode("email", as: String?.self)
            #expect(email == "changed-since@example.com", "a replay must not apply the event again")

            let unknown = try await apple.notify(try AppleFixture.notification(type: "consent-revoked", subject: "nobody-here"))
            #expect(unknown.status == .ok)
            #expect(unknown.text.contains("unknown_user"))

            let session = try await apple.signIn("apple-n-4").decode(Session.self)
            let forged = try await apple.notify(try AppleFixture.notification(type: "account-delete", subject: "apple-n-4", jti: "jti-forged", signWith: true))
            #expect(forged.status == .badRequest)
            let foreign = try await apple.notify(try AppleFixture.notification(type: "account-delete", subject: "apple-n-4", jti: "jti-foreign", audience: "com.other.app"))
            #expect(foreign.status == .badRequest)
            let garbage = try await apple.notify("not.a.jws")
            #expect(garbage.status == .badRequest)
            // Older than the jtis are remembered: a replay could no longer be told apart.
            let stale = try await apple.notify(try AppleFixture.notification(
                type: "account-delete", subject: "apple-n-4", jti: "jti-stale", issuedAt: Date().addingTimeInterval(-31 * 24 * 3600)))
            #expect(stale.status == .badRequest)
            #expect(try await apple.api.call(.get, "/v1/me", token: session.accessToken).status == .ok)
            let recorded = try await apple.api.asSuperuser("select count(*)::int as n from apple_notifications where jti in ('jti-forged', 'jti-foreign', 'jti-stale')")
            #expect(try recorded.first?.decode("n", as: Int.self) == 0)
        }
    }

    @Test("in maintenance Apple's notifications are still applied: Apple sends each one once")
    func notificationsDuringMaintenance() async throws {
        try await APIHarness.run(serviceStatus: ServiceStatusConfiguration(maintenance: true)) { api in
            let session = try await AuthenticationTests.appleSignIn(api, token: try AppleTestKeys.shared.identityToken(subject: "apple-m-1")).decode(Session.self)
            #expect(try await api.call(.patch, "/v1/me", token: session.accessToken, body: UpdateMeRequest(displayName: "x")).status == .serviceUnavailable)
            let payload = try AppleFixture.notification(type: "consent-revoked", subject: "apple-m-1")
            let reply = try await api.call(.post, "/v1/webhooks/apple", json: String(decoding: try JSONSerialization.data(withJSONObject: ["payload": payload]), as: UTF8.self))
            #expect(reply.status == .ok)
            #expect(try await api.call(.get, "/v1/me", token: session.accessToken).status == .unauthorized)
        }
    }
}
