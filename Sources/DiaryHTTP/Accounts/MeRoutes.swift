import DiaryCore
import DiaryModels
import Hummingbird
import Logging

struct MeRoutes {
    /// Removes the files of the account's photos once their rows are gone.
    let photoSweeper: PhotoSweeper
    /// Revokes the account's Apple token, queued by the deletion, once it has committed.
    let appleRevoker: AppleTokenRevoker

    func register(on router: RouterGroup<AuthenticatedContext>) {
        router.get("me") { _, context -> Me in
            try await UserRepository(scope: context.scope).me()
        }

        router.patch("me") { request, context -> Me in
            var patch = try await request.decode(as: UpdateMeRequest.self, context: context)
            patch.displayName = try patch.displayName.map { try Validation.displayName($0) }
            patch.profileImageUrl = try Validation.imageURL(patch.profileImageUrl)
            patch.timeZone = try Validation.timeZone(patch.timeZone)
            let reminderTime = try Validation.reminderTime(patch.settings?.reminderTime)
            patch.settings?.reminderTime = reminderTime
            return try await UserRepository(scope: context.scope).update(patch)
        }

        router.delete("me") { _, context -> HTTPResponse.Status in
            try await UserRepository(scope: context.scope).deleteAccount()
            photoSweeper.collectSoon()
            appleRevoker.wake()
            context.logger.info("account deleted")
            return .noContent
        }

        router.get("questions/today") { _, context -> TodayQuestion in
            try await UserRepository(scope: context.scope).todaysQuestion()
        }
    }
}
