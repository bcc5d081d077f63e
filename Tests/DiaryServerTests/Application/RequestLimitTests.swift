import DiaryModels
import Foundation
import Hummingbird
import Testing
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

@Suite("Errors and limits")
struct RequestLimitTests {
    @Test("oversized, malformed, mistyped and read-only bodies get precise problem+json errors")
    func badBodies() async throws {
        try await APIHarness.run { api in
            let aiko = try await api.signIn("aiko")
            let diary = try await api.createDiary("日々", type: .family, token: aiko.accessToken)
            let entries = "/v1/diaries/\(diary.id)/entries"

            let huge = try await api.call(.post, entries, token: aiko.accessToken, json: #"{"content":""# + String(repeating: "あ", count: 30_000) + #""}"#)
            #expect(huge.status == .contentTooLarge && huge.code == "payload_too_large")
            #expect(huge.headers[.contentType] == "application/problem+json")

            let malformed = try await api.call(.post, entries, token: aiko.accessToken, json: #"{"content": "x",,}"#)
            #expect(malformed.status == .badRequest && malformed.code == "validation_failed")

            let mistyped = try await api.call(.post, entries, token: aiko.accessToken, json: #"{"content": 42}"#)
            #expect(mistyped.status == .badRequest && mistyped.code == "validation_failed")
            #expect(mistyped.text.contains("content"))

            let missing = try await api.call(.post, "/v1/diaries", token: aiko.accessToken, json: #"{"type":"couple"}"#)
            #expect(missing.status == .badRequest && missing.text.contains("name"))

            let badType = try await api.call(.post, "/v1/diaries", token: aiko.accessToken, json: #"{"name":"x","type":"harem"}"#)
            #expect(badType.status == .badRequest && badType.text.contains("type"))

            let tooLong = try await api.call(.post, entries, token: aiko.accessToken, json: #"{"content":""# + String(repeating: "a", count: 10_001) + #""}"#)
            #expect(tooLong.status == .badRequest && tooLong.code == "validation_failed" && tooLong.text.contains("content"))
            let empty = try await api.call(.post, entries, token: aiko.accessToken, json: #"{"content":"   "}"#)
            #expect(empty.status == .badRequest && empty.code == "validation_failed")

            for body in [#"{"name":"x","type":"couple","inviteCode":"AAAAAAAAAA"}"#, #"{"name":"x","type":"couple","createdAt":"2020-01-01T00:00:00Z"}"#] {
                let reply = try await api.call(.post, "/v1/diaries", token: aiko.accessToken, json: body)
                #expect(reply.status == .badRequest && reply.code == "read_only_field", "\(body)")
            }
            let renameType = try await api.call(.patch, "/v1/diaries/\(diary.id)", token: aiko.accessToken, json: #"{"name":"x","type":"couple"}"#)
            #expect(renameType.code == "read_only_field")
            let premium = try await api.call(.patch, "/v1/me", token: aiko.accessToken, json: #"{"isPremium":true}"#)
            #expect(premium.code == "read_only_field")
            let author = try await api.call(.post, entries, token: aiko.accessToken, json: #"{"content":"x","author":{"id":"00000000-0000-0000-0000-000000000000"}}"#)
            #expect(author.code == "read_only_field")

            for limit in ["0", "101", "abc", "-1"] {
                let reply = try await api.call(.get, "\(entries)?limit=\(limit)", token: aiko.accessToken)
                #expect(reply.status == .badRequest, "limit=\(limit)")
            }
            #expect(try await api.call(.get, "\(entries)?limit=100", token: aiko.accessToken).status == .ok)
            #expect(try await api.call(.get, "/v1/diaries/not-a-uuid", token: aiko.accessToken).status == .notFound)
            #expect(try await api.call(.get, "/v1/no/such/route", token: aiko.accessToken).code == "not_found")
        }
    }

    @Test("a body nesting arrays and objects more than 32 deep is 400 validation_failed before a parser recurses into it")
    func deepBodies() throws {
        /// An entry whose unknown member `d` nests `depth` deep, the body's own object included.
        func body(_ depth: Int) -> Data {
            Data((#"{"content":"x","d":"# + String(repeating: "[", count: depth - 1) + String(repeating: "]", count: depth - 1) + "}").utf8)
        }
        #expect(try APIRequestDecoder.decode(CreateEntryRequest.self, from: body(APIRequestDecoder.maximumNesting)).content == "x")
        for depth in [APIRequestDecoder.maximumNesting + 1, 600, 100_000] {
            do {
                _ = try APIRequestDecoder.decode(CreateEntryRequest.self, from: body(depth))
                Issue.record("a body \(depth) deep is decoded")
            } catch let problem as Problem {
                #expect(problem.status == .badRequest && problem.code == .validationFailed, "\(depth)")
            }
        }
        // Brackets inside strings are text, not nesting.
        let quoted = Data((#"{"content":""# + String(repeating: "[", count: 100) + #""}"#).utf8)
        #expect(try APIRequestDecoder.decode(CreateEntryRequest.self, from: quoted).content.count == 100)
    }

    @Test("a known path called with a method it does not take is 405 with Allow, not 404")
    func methodNotAllowed() async throws {
        try await APIHarness.run { api in
            let aiko = try await api.signIn("aiko")
            for (method, path, allow) in [
                (HTTPRequest.Method("TRACE")!, "/v1/questions/today", "GET"),
                (.post, "/v1/diaries/\(UUID())", "GET, PATCH"),
                (.get, "/v1/diaries/join", "POST"),
                (.put, "/v1/me", "GET, PATCH, DELETE"),
            ] {
                let reply = try await api.call(method, path, token: aiko.accessToken)
                #expect(reply.status == .methodNotAllowed && reply.code == "method_not_allowed", "\(method) \(path)")
                #expect(reply.headers[.allow] == allow, "\(method) \(path)")
            }
            #expect(try await api.call(.get, "/v1/nothing/here", token: aiko.accessToken).status == .notFound)
        }
    }

    @Test("the 405 table lists exactly the paths and methods of openapi.yaml")
    func allowedMethodsMatchContract() throws {
        var contract: [String: Set<String>] = [:]
        var path: String?
        for line in OpenAPIDocument.text(file: nil).split(separator: "\n") {
            if line.hasPrefix("  /"), line.hasSuffix(":") {
                path = String(line.dropFirst(2).dropLast()).replacingOccurrences(of: #"\{[^}]+\}"#, with: ":id", options: .regularExpression)
                contract[path!] = []
            } else if let current = path, line.hasPrefix("    "), !line.hasPrefix("     "), line.hasSuffix(":"), !line.contains("parameters") {
                contract[current]!.insert(line.trimmingCharacters(in: .whitespaces).dropLast().uppercased())
            } else if !line.hasPrefix(" ") {
                path = nil
            }
        }
        let table = Dictionary(uniqueKeysWithValues: AllowedMethods.routes.map { ("/" + $0.template.joined(separator: "/"), Set($0.methods.map(\.rawValue))) })
        #expect(!contract.isEmpty)
        for path in Set(table.keys).union(contract.keys) {
            #expect(table[path] == contract[path], "\(path): the 405 table says \(table[path] ?? []), openapi.yaml says \(contract[path] ?? [])")
        }
    }

    @Test("profile updates validate time zones, reminder times, names and image URLs")
    func profileValidation() async throws {
        try await APIHarness.run { api in
            let aiko = try await api.signIn("aiko")
            let good = try await api.call(.patch, "/v1/me", token: aiko.accessToken,
                                          json: #"{"displayName":"あいこ","timeZone":"Europe/Paris","settings":{"reminderTime":"07:30"}}"#)
            #expect(good.status == .ok)
            let me = try good.decode(Me.self)
            #expect(me.displayName == "あいこ" && me.timeZone == "Europe/Paris")
            #expect(me.settings.reminderTime == "07:30" && me.settings.notificationNewEntry)
            for (body, field) in [
                (#"{"timeZone":"Mars/Olympus"}"#, "timeZone"), (#"{"timeZone":"JST"}"#, "timeZone"),
                (#"{"settings":{"reminderTime":"25:00"}}"#, "reminderTime"), (#"{"displayName":""}"#, "displayName"),
                (#"{"profileImageUrl":"javascript:alert(1)"}"#, "profileImageUrl"),
            ] {
                let reply = try await api.call(.patch, "/v1/me", token: aiko.accessToken, json: body)
                #expect(reply.status == .badRequest && reply.code == "validation_failed" && reply.text.contains(field), "\(body)")
            }
            let question = try await api.call(.get, "/v1/questions/today", token: aiko.accessToken).decode(TodayQuestion.self)
            #expect(question.date.count == 10)
        }
    }

    @Test("wrong invite codes are rate-limited per user: the 11th in a minute is 429 with Retry-After")
    func joinRateLimit() async throws {
        try await APIHarness.run { api in
            let owner = try await api.signIn("owner")
            let guesser = try await api.signIn("guesser")
            let diary = try await api.createDiary("ふたり", type: .couple, token: owner.accessToken)
            for attempt in 0..<10 {
                let reply = try await api.join("WRONGCODE\(attempt)", token: guesser.accessToken)
                #expect(reply.status == .notFound && reply.code == "invite_code_invalid")
            }
            let limited = try await api.join(diary.inviteCode, token: guesser.accessToken)
            #expect(limited.status == .tooManyRequests && limited.code == "rate_limited")
            #expect(Int(limited.headers[.retryAfter] ?? "") ?? 0 >= 1)
            // Someone else is not affected.
            let other = try await api.signIn("other")
            #expect(try await api.join(diary.inviteCode, token: other.accessToken).status == .ok)
        }
    }
}
