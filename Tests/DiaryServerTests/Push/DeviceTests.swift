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

    @Test("DELETE answers 204 whether or not the token was registered; sign-out keeps devices, account deletion removes them")
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
}
