import DiaryModels
import Foundation
import PostgresClient
import TestSupport
import Testing

@testable import DiaryCore
@testable import DiaryHTTP

/// The calendar's day (`GET …/entries?day=`) and a question cleared by an explicit null.
@Suite("Entries: a day's page, a cleared question")
struct EntryDayAndQuestionTests {
    static func day(_ api: APIHarness, _ diary: UUID, _ day: String, token: String, limit: Int = 20, before: String? = nil) async throws -> APIHarness.Reply {
        try await api.call(.get, "/v1/diaries/\(diary)/entries?day=\(day)&limit=\(limit)" + (before.map { "&before=\($0)" } ?? ""), token: token)
    }

    @Test("a day's entries are the caller's local day's, newest first, paged within it; each member's zone gives their own day")
    func calendarDay() async throws {
        try await APIHarness.run { api in
            let couple = try await EntryPhotoTests.couple(api)
            #expect(try await api.call(.patch, "/v1/me", token: couple.alice.accessToken, json: #"{"timeZone":"Asia/Tokyo"}"#).status == .ok)
            #expect(try await api.call(.patch, "/v1/me", token: couple.bob.accessToken, json: #"{"timeZone":"America/Los_Angeles"}"#).status == .ok)
            let diary = couple.diary.id
            // Tokyo's 2026-11-04 runs from 2026-11-03T15:00Z to 2026-11-04T15:00Z.
            for instant in ["2026-11-03T14:59:59Z", "2026-11-03T15:00:00Z", "2026-11-03T20:00:00Z", "2026-11-04T14:59:59Z", "2026-11-04T15:00:00Z"] {
                try await CalendarTests.entry(api, diary, by: couple.alice.user.id, at: instant)
            }
            let tokyo = try await Self.day(api, diary, "2026-11-04", token: couple.alice.accessToken).decode(EntryPage.self)
            #expect(tokyo.entries.map { PostgresTimestamp.format($0.createdAt) } == [
                "2026-11-04 14:59:59+00", "2026-11-03 20:00:00+00", "2026-11-03 15:00:00+00",
            ].map { PostgresTimestamp.format(PostgresTimestamp.parse($0)!) })
            #expect(tokyo.nextCursor == nil)

            // Paged: one at a time, never past the day's edge.
            var seen: [UUID] = []
            var cursor: String?
            repeat {
                let page = try await Self.day(api, diary, "2026-11-04", token: couple.alice.accessToken, limit: 1, before: cursor).decode(EntryPage.self)
                seen += page.entries.map(\.id)
                cursor = page.nextCursor
            } while cursor != nil && seen.count < 10
            #expect(seen == tokyo.entries.map(\.id))

            // Los Angeles (UTC−8): its 2026-11-03 runs from 08:00Z to the next 08:00Z.
            let losAngeles = try await Self.day(api, diary, "2026-11-03", token: couple.bob.accessToken).decode(EntryPage.self)
            #expect(losAngeles.entries.count == 3)
            // 2026-11-04T15:00Z is Tokyo's next midnight: the 5th's, not the 4th's.
            #expect(try await Self.day(api, diary, "2026-11-05", token: couple.alice.accessToken).decode(EntryPage.self).entries.count == 1)
            #expect(try await Self.day(api, diary, "2026-11-06", token: couple.alice.accessToken).decode(EntryPage.self).entries.isEmpty)

            for bad in ["2026-02-30", "2026-13-01", "26-11-04", "2026-11-4", "x"] {
                let reply = try await Self.day(api, diary, bad, token: couple.alice.accessToken)
                #expect(reply.status == .badRequest && reply.code == "validation_failed", "\(bad)")
            }
            let stranger = try await api.signIn("Mallory")
            #expect(try await Self.day(api, diary, "2026-11-04", token: stranger.accessToken).status == .notFound)
        }
    }

    @Test("PATCH with \"question\": null clears it; a question left out stays; a new one replaces it")
    func clearQuestion() async throws {
        try await APIHarness.run { api in
            let couple = try await EntryPhotoTests.couple(api)
            let path = "/v1/diaries/\(couple.diary.id)/entries"
            let entry = try await api.call(.post, path, token: couple.alice.accessToken, body: CreateEntryRequest(content: "晴れ", question: "今日の空は？")).decode(Entry.self)
            let kept = try await api.call(.patch, "\(path)/\(entry.id)", token: couple.alice.accessToken, json: #"{"content":"くもり"}"#).decode(Entry.self)
            #expect(kept.content == "くもり" && kept.question == "今日の空は？")
            let cleared = try await api.call(.patch, "\(path)/\(entry.id)", token: couple.alice.accessToken, json: #"{"question":null}"#)
            #expect(cleared.status == .ok)
            #expect(try cleared.decode(Entry.self).question == nil)
            #expect(try await api.call(.get, "\(path)/\(entry.id)", token: couple.bob.accessToken).decode(Entry.self).question == nil)
            let answered = try await api.call(.patch, "\(path)/\(entry.id)", token: couple.alice.accessToken, json: #"{"question":"好きな色は？"}"#).decode(Entry.self)
            #expect(answered.question == "好きな色は？" && answered.content == "くもり")
            #expect(try await api.call(.patch, "\(path)/\(entry.id)", token: couple.bob.accessToken, json: #"{"question":null}"#).status == .forbidden)

            // The model sends the null, and reads it back as a clearing.
            let request = UpdateEntryRequest(clearsQuestion: true)
            let body = String(decoding: try JSONEncoder().encode(request), as: UTF8.self)
            #expect(body == #"{"question":null}"#)
            #expect(try JSONDecoder().decode(UpdateEntryRequest.self, from: Data(body.utf8)).clearsQuestion)
            #expect(try !JSONDecoder().decode(UpdateEntryRequest.self, from: Data("{}".utf8)).clearsQuestion)
        }
    }
}
