import DiaryCore
import DiaryModels
import Hummingbird

/// Delta sync: `GET /v1/diaries/{diaryId}/changes?since=&limit=`, the socket's events for
/// a client that was away.
struct ChangeRoutes {
    static let defaultLimit = 100

    func register(on router: RouterGroup<AuthenticatedContext>) {
        router.get("diaries/:diaryId/changes") { request, context -> ChangeList in
            let diary = try Validation.id(context, "diaryId")
            var limit = Self.defaultLimit
            if let text = request.uri.queryParameters.get("limit") {
                guard let value = Int(text), (1...500).contains(value) else {
                    throw Problem.validation(field: "limit", "must be a whole number from 1 to 500")
                }
                limit = value
            }
            guard let since = request.uri.queryParameters.get("since"), ChangeCursor.isWellFormed(since) else {
                throw Problem.validation(field: "since", "is required: a changesCursor, nextCursor or event id (at most \(ChangeCursor.maximumLength) base64url characters)")
            }
            let repository = ChangeLogRepository(scope: context.scope)
            guard let cursor = ChangeCursor(String(since)),
                  case .page(let page) = try await repository.changes(after: cursor, inDiary: diary, limit: limit) else {
                throw DomainError(.resyncRequired, "this cursor is older than the kept changes, or unknown; reload the diary and follow its changesCursor")
            }
            return ChangeList(changes: page.events, nextCursor: page.next.encoded, hasMore: page.hasMore)
        }
    }
}
