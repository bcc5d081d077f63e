import DiaryCore
import DiaryModels
import Foundation
import Hummingbird

struct EntryRoutes {
    static let defaultLimit = 20
    /// More than any plan allows; a longer list is a malformed request, not a plan limit.
    static let maximumPhotos = 4
    /// Removes the files of photos an edit or a deletion dropped, once committed.
    let photoSweeper: PhotoSweeper

    func register(on router: RouterGroup<AuthenticatedContext>) {
        router.post("diaries/:diaryId/entries") { request, context -> EditedResponse<Entry> in
            let diary = try Validation.id(context, "diaryId")
            let body = try await request.decode(as: CreateEntryRequest.self, context: context)
            let content = try Validation.text(body.content, field: "content", limit: .entryContent)
            let question = try Validation.optionalText(body.question, field: "question", limit: .entryQuestion)
            let photoIDs = try Self.photoIDs(body.photoIds) ?? []
            switch try await EntryRepository(scope: context.scope).create(in: diary, id: body.id, content: content, question: question, photoIDs: photoIDs) {
            case .created(let entry): return EditedResponse(status: .created, response: entry)
            case .replayed(let entry): return EditedResponse(status: .ok, response: entry)
            }
        }

        router.get("diaries/:diaryId/entries") { request, context -> EntryPage in
            let diary = try Validation.id(context, "diaryId")
            var limit = Self.defaultLimit
            if let text = request.uri.queryParameters.get("limit") {
                guard let value = Int(text), (1...100).contains(value) else {
                    throw Problem.validation(field: "limit", "must be a whole number from 1 to 100")
                }
                limit = value
            }
            var cursor: EntryRepository.Cursor?
            if let text = request.uri.queryParameters.get("before") {
                guard let parsed = EntryRepository.Cursor(text) else { throw Problem.validation(field: "before", "is not a cursor this server issued") }
                cursor = parsed
            }
            var day: EntryRepository.Day?
            if let text = request.uri.queryParameters.get("day") {
                guard let parsed = EntryRepository.Day(text) else { throw Problem.validation(field: "day", "must be YYYY-MM-DD, a real date from 1900-01-01 to 9999-12-31") }
                day = parsed
            }
            return try await EntryRepository(scope: context.scope).timeline(of: diary, limit: limit, before: cursor, on: day)
        }

        router.get("diaries/:diaryId/calendar") { request, context -> DiaryCalendar in
            let diary = try Validation.id(context, "diaryId")
            guard let text = request.uri.queryParameters.get("month"), let month = DiaryCalendarRepository.Month(text) else {
                throw Problem.validation(field: "month", "must be YYYY-MM, from 1900-01 to 9999-12")
            }
            return try await DiaryCalendarRepository(scope: context.scope).calendar(of: diary, month: month)
        }

        router.get("diaries/:diaryId/entries/:entryId") { _, context -> Entry in
            try await EntryRepository(scope: context.scope).find(try Validation.id(context, "entryId"), in: try Validation.id(context, "diaryId"))
        }

        router.patch("diaries/:diaryId/entries/:entryId") { request, context -> Entry in
            let diary = try Validation.id(context, "diaryId")
            let entry = try Validation.id(context, "entryId")
            let body = try await request.decode(as: UpdateEntryRequest.self, context: context)
            let content = try Validation.optionalText(body.content, field: "content", limit: .entryContent)
            let question = try Validation.optionalText(body.question, field: "question", limit: .entryQuestion)
            let photoIDs = try Self.photoIDs(body.photoIds)
            let updated = try await EntryRepository(scope: context.scope).update(
                entry, in: diary, content: content, question: question, clearingQuestion: body.clearsQuestion, photoIDs: photoIDs)
            if photoIDs != nil { photoSweeper.collectSoon() }
            return updated
        }

        router.delete("diaries/:diaryId/entries/:entryId") { _, context -> HTTPResponse.Status in
            try await EntryRepository(scope: context.scope).delete(try Validation.id(context, "entryId"), in: try Validation.id(context, "diaryId"))
            photoSweeper.collectSoon()
            return .noContent
        }

        router.post("diaries/:diaryId/entries/:entryId/read") { _, context -> HTTPResponse.Status in
            try await EntryRepository(scope: context.scope).markRead(try Validation.id(context, "entryId"), in: try Validation.id(context, "diaryId"))
            return .noContent
        }

        router.get("diaries/:diaryId/entries/:entryId/reads") { _, context -> ReadList in
            ReadList(reads: try await EntryRepository(scope: context.scope).reads(of: try Validation.id(context, "entryId"), in: try Validation.id(context, "diaryId")))
        }
    }

    /// At most four, each once. Whether the plan allows them is the database's to say.
    static func photoIDs(_ ids: [UUID]?) throws -> [UUID]? {
        guard let ids else { return nil }
        guard ids.count <= maximumPhotos else { throw Problem.validation(field: "photoIds", "holds at most \(maximumPhotos) photos") }
        guard Set(ids).count == ids.count else { throw Problem.validation(field: "photoIds", "names a photo more than once") }
        return ids
    }
}
