import DiaryCore
import DiaryModels
import Foundation
import Hummingbird

/// What a member who left keeps: the Data Safety Center lists their departures
/// (`ExportRoutes`), the personal export carries their own entries, and a closed diary is
/// theirs to restore until its deletion date.
struct DepartureRoutes {
    /// `CLOSED_DIARY_RETENTION_DAYS`.
    let window: Duration
    /// A restore counts as a creation on the free plan.
    let freePlanDiaries: Int

    func register(on router: RouterGroup<AuthenticatedContext>) {
        router.post("diaries/:diaryId/restore") { _, context -> Diary in
            try await DepartureRepository(scope: context.scope, window: window).restore(try Validation.id(context, "diaryId"), freePlanDiaries: freePlanDiaries)
        }
    }
}
