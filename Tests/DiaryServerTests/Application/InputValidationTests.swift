import DiaryModels
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing
import TestSupport
@testable import DiaryCore

/// What someone new to the API meets first: lengths as the phone counts them, names that
/// cannot hide control characters, bodies that must say they are JSON, and HEAD on probes.
@Suite("Newcomer's rough edges")
struct InputValidationTests {
    static let family = "👨‍👩‍👧"
    static let decomposedE = "e\u{301}"

    @Test("limits count user-perceived characters: ten family emoji and fifty decomposed é fit in 50")
    func graphemeLimits() async throws {
        try await APIHarness.run { api in
            let session = try await api.signIn("alice")
            for name in [String(repeating: Self.family, count: 10), String(repeating: Self.decomposedE, count: 50)] {
                let me = try await api.call(.patch, "/v1/me", token: session.accessToken, body: UpdateMeRequest(displayName: name))
                #expect(me.status == .ok, "\(name.unicodeScalars.count) code points answered \(me.status): \(me.text)")
                #expect(try me.decode(Me.self).displayName == name)
                let diary = try await api.call(.post, "/v1/diaries", token: session.accessToken, body: CreateDiaryRequest(name: name, type: .family))
                #expect(diary.status == .created, "diary name: \(diary.text)")
            }
            let tooLong = try await api.call(.patch, "/v1/me", token: session.accessToken, body: UpdateMeRequest(displayName: String(repeating: Self.family, count: 51)))
            #expect(tooLong.status == .badRequest)
            #expect(tooLong.code == "validation_failed")
            // One "character" of 60 combining marks is more than any script needs: refused, not a 500.
            let zalgo = "a" + String(repeating: "\u{301}", count: 600)
            #expect(try await api.call(.patch, "/v1/me", token: session.accessToken, body: UpdateMeRequest(displayName: zalgo)).status == .badRequest)
            let diary = try await api.createDiary("日記", type: .family, token: session.accessToken)
            let long = String(repeating: Self.decomposedE, count: 10_000)
            #expect(try await api.post(long, in: diary.id, token: session.accessToken).status == .created)
            #expect(try await api.post(long + "e", in: diary.id, token: session.accessToken).status == .badRequest)
        }
    }

    @Test("names refuse C0 and C1 control characters and text-direction overrides")
    func controlCharactersInNames() async throws {
        try await APIHarness.run { api in
            for name in ["bell\u{7}", "evil\u{202E}txt.exe", "iso\u{2066}late", "c1\u{85}x"] {
                let dev = try await api.call(.post, "/v1/auth/dev", body: DevSignInRequest(name: name))
                #expect(dev.status == .badRequest, "\(name.debugDescription) answered \(dev.status)")
                #expect(dev.code == "validation_failed")
            }
            let session = try await api.signIn("carol")
            let patch = try await api.call(.patch, "/v1/me", token: session.accessToken, body: UpdateMeRequest(displayName: "a\u{202D}b"))
            #expect(patch.status == .badRequest)
            // Joiners and ordinary marks in names stay allowed.
            #expect(try await api.call(.patch, "/v1/me", token: session.accessToken, body: UpdateMeRequest(displayName: "ママ\(Self.family)")).status == .ok)
        }
    }

    @Test("a JSON body without a JSON content type is 415 unsupported_media_type")
    func contentType() async throws {
        try await APIHarness.run { api in
            let session = try await api.signIn("dave")
            let body = ByteBuffer(string: #"{"name":"日記","type":"family"}"#)
            func post(_ type: String?) async throws -> (HTTPResponse.Status, String) {
                var headers: HTTPFields = [.authorization: "Bearer \(session.accessToken)"]
                if let type { headers[.contentType] = type }
                return try await api.client.execute(uri: "/v1/diaries", method: .post, headers: headers, body: body) { response in
                    (response.status, String(buffer: response.body))
                }
            }
            for type in ["text/plain", nil, "application/x-www-form-urlencoded"] as [String?] {
                let (status, text) = try await post(type)
                #expect(status == .unsupportedMediaType, "\(type ?? "no type") answered \(status)")
                #expect(text.contains("unsupported_media_type"))
            }
            #expect(try await post("application/json; charset=utf-8").0 == .created)
        }
    }

    @Test("HEAD /health and /ready answer as GET does, without a body")
    func headOnProbes() async throws {
        try await APIHarness.run { api in
            for path in ["/health", "/ready"] {
                let head = try await api.call(.head, path)
                #expect(head.status == .ok, "\(path)")
                #expect(head.body.isEmpty)
                #expect(try await api.call(.get, path).status == .ok)
            }
        }
    }

    @Test("an expired access token is 401 token_expired, an invalid one 401 unauthorized; both say invalid_token")
    func expiredToken() async throws {
        try await APIHarness.run { api in
            let session = try await api.signIn("erin")
            let server = TokenService(key: try TokenService.loadKey(path: nil, dataDirectory: api.dataDirectory, production: false))
            let identity = try await server.verifyAccessToken(session.accessToken)
            let old = Date().addingTimeInterval(-TokenService.accessLifetime.totalSeconds - 10)
            let expired = try await api.call(.get, "/v1/me", token: try await server.accessToken(for: identity, issuedAt: old))
            #expect(expired.status == .unauthorized)
            #expect(expired.code == "token_expired")
            #expect(expired.headers[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true)
            // Expired and signed by someone else: not ours, so not merely expired.
            let otherKey = try TokenService.loadKey(path: nil, dataDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("other-\(UUID())").path, production: false)
            let forged = try await api.call(.get, "/v1/me", token: try await TokenService(key: otherKey).accessToken(for: identity, issuedAt: old))
            #expect(forged.status == .unauthorized)
            #expect(forged.code == "unauthorized")
            #expect(forged.headers[.wwwAuthenticate]?.contains(#"error="invalid_token""#) == true)
            // No token at all is not an invalid one.
            let none = try await api.call(.get, "/v1/me")
            #expect(none.code == "unauthorized")
            #expect(none.headers[.wwwAuthenticate]?.contains("error=") == false)
        }
    }
}

extension InputValidationTests {
    @Test("a key repeated in one object is 400; errors name the field and the allowed values in the API's words")
    func duplicateKeysAndPlainMessages() async throws {
        try await APIHarness.run { api in
            let session = try await api.signIn("frank")
            let repeated = try await api.call(.post, "/v1/diaries", token: session.accessToken, json: #"{"name":"a","type":"family","name":"b"}"#)
            #expect(repeated.status == .badRequest)
            #expect(repeated.text.contains("name"))
            let nested = try await api.call(.patch, "/v1/me", token: session.accessToken, json: #"{"settings":{"notificationReminder":true,"notificationReminder":false}}"#)
            #expect(nested.status == .badRequest)
            // A value spelled like a key is no key.
            #expect(try await api.call(.post, "/v1/diaries", token: session.accessToken, json: #"{"name":"type","type":"family"}"#).status == .created)
            let escaped = try await api.call(.post, "/v1/diaries", token: session.accessToken, json: #"{"name":"a","type":"family","n\u0061me":"b"}"#)
            #expect(escaped.status == .badRequest, "an escaped spelling is the same key")

            let badType = try await api.call(.post, "/v1/diaries", token: session.accessToken, json: #"{"name":"a","type":"group"}"#)
            #expect(badType.status == .badRequest)
            #expect(badType.text.contains("must be one of couple, family, friends, anonymous"), "\(badType.text)")
            #expect(!badType.text.contains("Cannot initialize"))
            let diary = try await api.createDiary("日記", type: .family, token: session.accessToken)
            let badID = try await api.call(.post, "/v1/diaries/\(diary.id)/entries", token: session.accessToken, json: #"{"id":"not-a-uuid","content":"x"}"#)
            #expect(badID.status == .badRequest)
            #expect(badID.text.contains("must be a UUID"), "\(badID.text)")
            #expect(!badID.text.contains("Attempted to decode"))
        }
    }
}

extension InputValidationTests {
    @Test("a PATCH that changes nothing leaves updatedAt alone; one that changes something moves it")
    func emptyPatch() async throws {
        try await APIHarness.run { api in
            let session = try await api.signIn("gina")
            let diary = try await api.createDiary("日記", type: .family, token: session.accessToken)
            let posted = try await api.post("はじめ", in: diary.id, token: session.accessToken).decode(Entry.self)
            try await waitUntil("the clock to pass the entry's updatedAt") { Date() > posted.updatedAt }
            let path = "/v1/diaries/\(diary.id)/entries/\(posted.id)"
            for body in ["{}", #"{"content":null,"question":null}"#, #"{"content":"はじめ"}"#] {
                let reply = try await api.call(.patch, path, token: session.accessToken, json: body)
                #expect(reply.status == .ok, "\(body): \(reply.text)")
                #expect(try reply.decode(Entry.self).updatedAt == posted.updatedAt, "\(body) moved updatedAt")
            }
            let changed = try await api.call(.patch, path, token: session.accessToken, json: #"{"content":"つぎ"}"#).decode(Entry.self)
            #expect(changed.updatedAt > posted.updatedAt)
        }
    }
}

extension InputValidationTests {
    @Test("a since that cannot be a cursor is 400; a well-formed one the server does not know is 410 resync_required")
    func malformedCursor() async throws {
        try await APIHarness.run { api in
            let session = try await api.signIn("hana")
            let diary = try await api.createDiary("日記", type: .family, token: session.accessToken)
            let malformed = try await api.call(.get, "/v1/diaries/\(diary.id)/changes?since=%C3%97%C3%B8", token: session.accessToken)
            #expect(malformed.status == .badRequest)
            #expect(malformed.code == "validation_failed")
            let unknown = try await api.call(.get, "/v1/diaries/\(diary.id)/changes?since=not-a-cursor", token: session.accessToken)
            #expect(unknown.status == .gone)
            #expect(try await api.call(.get, "/v1/realtime?since=%C3%97", token: session.accessToken).status == .badRequest)
        }
    }
}

extension InputValidationTests {
    @Test("a declared Content-Length past any route's limit is 413 at the header, even where the route reads no body")
    func declaredLengthRefusedAtTheHeader() async throws {
        try await APIHarness.run(testing: .live) { api in
            let port = try #require(api.client.port)
            let session = try await api.signIn("ichiro")
            let answer = try await RawHTTP.exchange(port: port, sending: Array(
                "POST /v1/auth/logout HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer \(session.accessToken)\r\nContent-Length: 100000000\r\n\r\n".utf8))
            #expect(answer.hasPrefix("HTTP/1.1 413"), "\(answer.prefix(80))")
            // Nothing ran: the session is still live.
            #expect(try await api.call(.get, "/v1/me", token: session.accessToken).status == .ok)
        }
    }
}
