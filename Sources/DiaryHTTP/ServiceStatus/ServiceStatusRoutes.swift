import DiaryCore
import DiaryModels
import Hummingbird

/// `GET /v1/service-status`: maintenance, the minimum app version, and the notices,
/// shutdowns among them, six months ahead. No sign-in: an app that cannot sign in can still
/// learn why.
struct ServiceStatusRoutes<Context: RequestContext> {
    let configuration: ServiceStatusConfiguration
    let notices: ServiceNoticeRepository

    func register(on router: RouterGroup<Context>) {
        router.get("service-status") { _, _ -> ServiceStatus in
            ServiceStatus(
                maintenance: configuration.maintenance,
                minimumAppVersion: configuration.minimumAppVersion?.description,
                notices: try await notices.list())
        }
    }
}
