import DiaryCore
import DiaryModels
import Foundation
import Hummingbird

struct DiaryRoutes {
    /// Wrong invite codes per user: 10 a minute.
    let joinLimiter: AttemptLimiter<UUID>
    /// Diaries a free user may create (`FREE_PLAN_DIARIES`); joining is never limited.
    let freePlanDiaries: Int
    /// The invite page's own limiter (`INVITE_PAGES_PER_MINUTE` per client address): a preview
    /// tells a current code from any other, so pages and previews share one budget.
    let previewLimiter: AttemptLimiter<String>

    func register(on router: RouterGroup<AuthenticatedContext>) {
        router.post("diaries") { request, context -> EditedResponse<Diary> in
            let body = try await request.decode(as: CreateDiaryRequest.self, context: context)
            let name = try Validation.text(body.name, field: "name", limit: .diaryName)
            switch try await DiaryRepository(scope: context.scope).create(id: body.id, name: name, type: body.type, freePlanDiaries: freePlanDiaries) {
            case .created(let diary): return EditedResponse(status: .created, response: diary)
            case .replayed(let diary): return EditedResponse(status: .ok, response: diary)
            }
        }

        router.get("diaries") { _, context -> DiaryList in
            DiaryList(diaries: try await DiaryRepository(scope: context.scope).list())
        }

        router.post("diaries/join") { request, context -> Diary in
            let body = try await request.decode(as: JoinDiaryRequest.self, context: context)
            let typed = try Validation.text(body.inviteCode, field: "inviteCode", limit: .inviteCode)
            let code: String
            switch context.scope.inviteLinks.read(typed) {
            case .code(let typedCode): code = typedCode
            case .link(let linked): code = linked
            case .foreignLink:
                throw Problem.validation(field: "inviteCode", "is a link, but not this server's invite link (\(context.scope.inviteLinks.url(for: "<code>")))")
            }
            if let wait = joinLimiter.retryAfter(for: context.userID) {
                AppMetrics.recordRateLimitRejection("join_attempts")
                throw Problem(.rateLimited, detail: "too many wrong invite codes; try again later", headers: [.retryAfter: String(wait)])
            }
            do {
                return try await DiaryRepository(scope: context.scope).join(inviteCode: code)
            } catch let error as DomainError where error.reason == .inviteCodeInvalid {
                joinLimiter.record(for: context.userID)
                throw error
            }
        }

        router.get("invites/:code") { _, context -> InvitePreview in
            let typed = context.parameters.get("code") ?? ""
            guard (1...InviteCodeLookup.maximumLength).contains(typed.utf8.count) else {
                throw Problem.validation(field: "code", "is an invite code: at most \(InviteCodeLookup.maximumLength) characters")
            }
            if let wait = previewLimiter.admit(context.clientAddress ?? "unknown") {
                AppMetrics.recordRateLimitRejection("invite_previews")
                throw Problem(.rateLimited, detail: "too many invite previews from this address; try again later", headers: [.retryAfter: String(wait)])
            }
            return try await DiaryRepository(scope: context.scope).preview(inviteCode: typed)
        }

        router.get("diaries/:diaryId") { _, context -> Diary in
            try await DiaryRepository(scope: context.scope).find(try Validation.id(context, "diaryId"))
        }

        router.patch("diaries/:diaryId") { request, context -> Diary in
            let id = try Validation.id(context, "diaryId")
            let body = try await request.decode(as: UpdateDiaryRequest.self, context: context)
            let name = try Validation.text(body.name, field: "name", limit: .diaryName)
            return try await DiaryRepository(scope: context.scope).rename(id, to: name)
        }

        router.post("diaries/:diaryId/invite-code") { _, context -> InviteCodeResponse in
            let code = try await DiaryRepository(scope: context.scope).rotateInviteCode(try Validation.id(context, "diaryId"))
            return InviteCodeResponse(inviteCode: code, inviteUrl: context.scope.inviteLinks.url(for: code))
        }

        router.get("diaries/:diaryId/members") { _, context -> MemberList in
            MemberList(members: try await DiaryRepository(scope: context.scope).members(of: try Validation.id(context, "diaryId")))
        }

        router.delete("diaries/:diaryId/members/:userId") { _, context -> HTTPResponse.Status in
            let diary = try Validation.id(context, "diaryId")
            let member = try Validation.id(context, "userId")
            try await DiaryRepository(scope: context.scope).remove(member: member, from: diary)
            return .noContent
        }
    }
}
