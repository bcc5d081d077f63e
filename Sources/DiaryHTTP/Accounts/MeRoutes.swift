import DiaryCore
import DiaryModels
import Foundation
import Hummingbird
import Logging

struct MeRoutes {
    /// Removes the files of the account's photos once their rows are gone.
    let photoSweeper: PhotoSweeper
    /// Revokes the account's Apple token, queued by the deletion, once it has committed.
    let appleRevoker: AppleTokenRevoker
    /// Keeps the profile photo's bytes, as it keeps entries' photos.
    let photoStore: any PhotoStore

    func register(on router: RouterGroup<AuthenticatedContext>) {
        router.get("me") { _, context -> Me in
            try await UserRepository(scope: context.scope).me()
        }

        router.patch("me") { request, context -> Me in
            var patch = try await request.decode(as: UpdateMeRequest.self, context: context)
            patch.displayName = try patch.displayName.map { try Validation.displayName($0) }
            try Validation.noProfileImageURL(patch.profileImageUrl)
            patch.timeZone = try Validation.timeZone(patch.timeZone)
            let reminderTime = try Validation.reminderTime(patch.settings?.reminderTime)
            patch.settings?.reminderTime = reminderTime
            return try await UserRepository(scope: context.scope).update(patch)
        }

        // The raw image as the body, as POST /v1/photos takes it.
        router.put("me/photo") { request, context -> Me in
            let declared = try PhotoRoutes.declaredType(request.headers[.contentType])
            let bytes = try await PhotoRoutes.body(of: request)
            let me = try await PhotoRepository(scope: context.scope, store: photoStore).setProfilePhoto(bytes, declaredAs: declared)
            photoSweeper.collectSoon()
            context.logger.info("profile photo set", metadata: ["received": "\(bytes.count)"])
            return me
        }

        router.delete("me/photo") { _, context -> Me in
            let me = try await PhotoRepository(scope: context.scope, store: photoStore).removeProfilePhoto()
            photoSweeper.collectSoon()
            return me
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
