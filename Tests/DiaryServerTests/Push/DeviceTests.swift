import DiaryModels
import Foundation
import PostgresClient
import Testing
import TestSupport

/// PUT, GET and DELETE /v1/me/devices: the tokens that receive a user's notifications.
@Suite("Devices")
struct DeviceTests {
    @Test("a token is 64 to 200 hex digits in any case, kept lower-case; the environment is sandbox or production")
    func validation() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice")
            let upper = PushFixture.deviceToken().uppercased()
            for bad in [String(upper.dropLast()), upper + String(repeating: "a", count: 137), String(upper.dropLast()) + "g"] {
                let reply = try await api.call(.put, "/v1/me/devices/\(bad)", token: alice.accessToken, json: #"{"environment":"sandbox"}"#)
                #expect(reply.status == .badRequest, "\(bad.count) characters")
                #expect(reply.code == "validation_failed")
            }
            let wrongEnvironment = try await api.call(.put, "/v1/me/devices/\(upper)", token: alice.accessToken, json: #"{"environment":"staging"}"#)
            #expect(wrongEnvironment.status == .badRequest)
            #expect(wrongEnvironment.code == "validation_failed")

            let longest = String(repeating: "ab", count: 100)
            #expect(try await api.call(.put, "/v1/me/devices/\(upper)", token: alice.accessToken, json: #"{"environment":"sandbox"}"#).status == .noContent)
            #expect(try await api.call(.put, "/v1/me/devices/\(longest)", token: alice.accessToken, json: #"{"environment":"production"}"#).status == .noContent)
            let devices = try await api.call(.get, "/v1/me/devices", token: alice.accessToken).decode(DeviceList.self).devices
            #expect(Set(devices.map(\.token)) == [upper.lowercased(), longest])
            #expect(devices.first { $0.token == longest }?.environment == "production")
        }
    }

    @Test("DELETE answers 204 whether or not the token was registered; sign-out removes the session's devices, account deletion all of them")
    func removal() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice")
            let token = PushFixture.deviceToken()
            #expect(try await api.call(.delete, "/v1/me/devices/\(token)", token: alice.accessToken).status == .noContent)
            try await api.call(.put, "/v1/me/devices/\(token)", token: alice.accessToken, json: #"{"environment":"sandbox"}"#)
            let kept = PushFixture.deviceToken()
            try await api.call(.put, "/v1/me/devices/\(kept)", token: alice.accessToken, json: #"{"environment":"sandbox"}"#)
            #expect(try await api.call(.delete, "/v1/me/devices/\(token.uppercased())", token: alice.accessToken).status == .noContent)
            #expect(try await api.call(.get, "/v1/me/devices", token: alice.accessToken).decode(DeviceList.self).devices.map(\.token) == [kept])

            // Another session's device stays when this one signs out.
            let phone = try await api.signIn("alice")
            try await api.call(.put, "/v1/me/devices/\(PushFixture.deviceToken())", token: phone.accessToken, json: #"{"environment":"sandbox"}"#)
            try await api.call(.post, "/v1/auth/logout", token: alice.accessToken, json: #"{"refreshToken":"\#(alice.refreshToken)"}"#)
            #expect(try await api.asSuperuser("select count(*) from devices").first?.decode("count", as: Int.self) == 1)

            let again = try await api.signIn("alice")
            #expect(try await api.call(.delete, "/v1/me", token: again.accessToken).status == .noContent)
            #expect(try await api.asSuperuser("select count(*) from devices").first?.decode("count", as: Int.self) == 0)
        }
    }

    @Test("a token registered by another user moves to the caller; the 21st device replaces the oldest")
    func movingAndCap() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice")
            let bob = try await api.signIn("bob")
            let shared = PushFixture.deviceToken()
            try await api.call(.put, "/v1/me/devices/\(shared)", token: alice.accessToken, json: #"{"environment":"sandbox"}"#)
            try await api.call(.put, "/v1/me/devices/\(shared)", token: bob.accessToken, json: #"{"environment":"production"}"#)
            #expect(try await api.call(.get, "/v1/me/devices", token: alice.accessToken).decode(DeviceList.self).devices.isEmpty)
            #expect(try await api.call(.get, "/v1/me/devices", token: bob.accessToken).decode(DeviceList.self).devices.map(\.environment) == ["production"])

            var tokens: [String] = []
            for _ in 0..<21 {
                let token = PushFixture.deviceToken()
                tokens.append(token)
                #expect(try await api.call(.put, "/v1/me/devices/\(token)", token: alice.accessToken, json: #"{"environment":"sandbox"}"#).status == .noContent)
            }
            let devices = try await api.call(.get, "/v1/me/devices", token: alice.accessToken).decode(DeviceList.self).devices
            #expect(devices.count == 20)
            #expect(Set(devices.map(\.token)) == Set(tokens.dropFirst()))
        }
    }

    @Test("a device is its session's: a session revoked or past its refresh token's life gets no more pushes, and its device is forgotten; a live one's still does")
    func boundToSession() async throws {
        try await APIHarness.run { api in
            let couple = try await EntryPhotoTests.couple(api)
            let revoked = try await api.signIn("Bob")
            let expired = try await api.signIn("Bob")
            let live = try await api.signIn("Bob")
            var tokens: [String: String] = [:]
            for (name, session) in [("revoked", revoked), ("expired", expired), ("live", live)] {
                let token = PushFixture.deviceToken()
                tokens[name] = token
                #expect(try await api.call(.put, "/v1/me/devices/\(token)", token: session.accessToken, json: #"{"environment":"sandbox"}"#).status == .noContent)
            }
            let bound = try await api.asSuperuser("select count(*)::int as n from devices where session_id is not null")
            #expect(try bound.first?.decode("n", as: Int.self) == 3)
            #expect(revoked.user.id == couple.bob.user.id && live.user.id == couple.bob.user.id)
            // Bob's sessions, oldest first: the couple's, then the three above.
            let sessions = try await api.asSuperuser("select id from sessions where user_id = \(couple.bob.user.id) order by created_at, id")
                .map { try $0.decode("id", as: UUID.self) }
            try #require(sessions.count == 4)
            // As Apple's consent revocation and a refresh token's reuse end a session, and as time ends one.
            try await api.asSuperuser("update sessions set revoked_at = now() where id = \(sessions[1])")
            try await api.asSuperuser("update refresh_tokens set expires_at = now() - interval '1 second' where session_id = \(sessions[2])")

            #expect(try await api.post("アリスより", in: couple.diary.id, token: couple.alice.accessToken).status == .created)
            let claimed = try await api.asSuperuser("select device_token from claim_push_batch(100, interval '1 minute')")
            #expect(try claimed.map { try $0.decode("device_token", as: String.self) } == [tokens["live"]!])
            let left = try await api.asSuperuser("select token from devices where user_id = \(couple.bob.user.id)")
            #expect(try left.map { try $0.decode("token", as: String.self) } == [tokens["live"]!])
        }
    }

    @Test("a device bound to no session (before binding, or from the release still serving) goes at its user's next sign-out")
    func unboundDeviceGoesAtSignOut() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob")
            let unbound = PushFixture.deviceToken(), bobs = PushFixture.deviceToken()
            try await api.asSuperuser("insert into devices (token, user_id, environment) values (\(unbound), \(alice.user.id), 'sandbox')")
            try await api.asSuperuser("insert into devices (token, user_id, environment) values (\(bobs), \(bob.user.id), 'sandbox')")
            #expect(try await api.call(.post, "/v1/auth/logout", token: alice.accessToken).status == .noContent)
            let left = try await api.asSuperuser("select token from devices order by token").map { try $0.decode("token", as: String.self) }
            #expect(left == [bobs], "Alice's unbound device went with her sign-out; Bob's stays")
        }
    }

    @Test("the release still serving registers through register_device's two arguments: the device is bound to the session authenticate() recorded")
    func twoArgumentRegistrationIsBound() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice")
            let session = try #require(try await api.asSuperuser("select id from sessions where user_id = \(alice.user.id)").first?.decode("id", as: UUID.self))
            let token = PushFixture.deviceToken()
            try await TestDatabase.withPool(api.database.as(TestDatabase.appRole), size: 1) { app in
                _ = try await app.transaction([
                    "select authenticate(\(session), \(alice.user.id))",
                    "select register_device(\(token), 'sandbox')",
                ])
            }
            let bound = try await api.asSuperuser("select session_id from devices where token = \(token)")
            #expect(try bound.first?.decode("session_id", as: UUID?.self) == session)
            #expect(try await api.call(.post, "/v1/auth/logout", token: alice.accessToken).status == .noContent)
            #expect(try await api.asSuperuser("select 1 from devices where token = \(token)").isEmpty)
        }
    }

    @Test("the push claim forgets a device of an ended session only while it is still bound to it: one a new session registers meanwhile stays, and gets its push")
    func claimKeepsADeviceRegisteredAgain() async throws {
        try await APIHarness.run { api in
            let ended = try await api.signIn("alice"), live = try await api.signIn("alice")
            let token = PushFixture.deviceToken()
            #expect(try await api.call(.put, "/v1/me/devices/\(token)", token: ended.accessToken, json: #"{"environment":"sandbox"}"#).status == .noContent)
            try await api.asSuperuser("""
                insert into push_outbox (user_id, device_token, kind, payload) values (\(ended.user.id), \(token), 'reminder', '{"aps": {}}')
                """)
            let sessions = try await api.asSuperuser("select id from sessions where user_id = \(ended.user.id) order by created_at, id").map { try $0.decode("id", as: UUID.self) }
            try #require(sessions.count == 2)
            try await api.asSuperuser("update sessions set revoked_at = now() where id = \(sessions[0])")

            try await TestDatabase.withPool(api.database.as(TestDatabase.appRole), size: 1) { app in
                try await TestDatabase.withPool(api.database, size: 2) { admin in
                    // The new session registers the device again, and holds its row until the claim waits on it.
                    try await app.withConnection { registering in
                        try await registering.query("begin")
                        try await registering.query("select authenticate(\(sessions[1]), \(live.user.id))")
                        try await registering.query("select register_device(\(token), 'sandbox', \(sessions[1]))")
                        let claim = Task { try await admin.query("select device_token from claim_push_batch(100, interval '1 minute')") }
                        try await waitUntil("the claim waits on the device's row") {
                            !(try await admin.query("""
                                select 1 from pg_stat_activity where query like '%claim_push_batch%' and wait_event_type = 'Lock' and pid <> pg_backend_pid()
                                """)).isEmpty
                        }
                        try await registering.query("commit")
                        let claimed = try await claim.value.map { try $0.decode("device_token", as: String.self) }
                        #expect(claimed == [token], "the push goes to the device its live session registered")
                    }
                }
            }
            let device = try await api.asSuperuser("select session_id from devices where token = \(token)")
            #expect(try device.first?.decode("session_id", as: UUID?.self) == sessions[1])
        }
    }
}
