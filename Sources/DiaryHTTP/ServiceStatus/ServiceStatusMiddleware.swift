import DiaryCore
import Hummingbird
import Logging

/// The service's state at the door of every /v1 route: an app below the minimum version is
/// asked to upgrade, and maintenance refuses writes.
///
/// What must always work does: the status itself, so an app can say why; exports, so users
/// can always take their data out, whatever their app's version; and in maintenance, reads,
/// sign-in, and the webhooks (Apple and RevenueCat are not apps that can wait it out: Apple
/// sends each notification once).
struct ServiceStatusMiddleware<Context: RequestContext>: RouterMiddleware {
    let configuration: ServiceStatusConfiguration

    static var versionHeader: HTTPFields.Element.Name { HTTPFields.Element.Name("X-App-Version")! }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        let route = ServiceStatusRoute(path: path)
        if let minimum = configuration.minimumAppVersion, !route.ignoresVersion, let sent = request.headers[Self.versionHeader] {
            guard let version = AppVersion(sent) else {
                throw Problem.validation(field: "X-App-Version", "must be a version such as 1.4.2")
            }
            if version < minimum {
                context.logger.info("request refused: app too old", metadata: ["app_version": "\(version)", "minimum": "\(minimum)"])
                throw Problem(.upgradeRequired,
                              detail: "this version of the app is no longer supported; update to \(minimum) or later")
            }
        }
        if configuration.maintenance, !route.allowedInMaintenance(request.method) {
            throw Problem.serviceUnavailable(
                "the service is under maintenance; reading and exporting still work", code: .maintenance,
                retryAfterSeconds: configuration.maintenanceRetryAfterSeconds)
        }
        return try await next(request, context)
    }
}

/// Which kind of /v1 route a path is, for the service's state.
struct ServiceStatusRoute {
    let isStatus: Bool
    let isExport: Bool
    let isSignIn: Bool
    let isWebhook: Bool

    init(path: String) {
        let segments = path.split(separator: "/")
        isStatus = path == "/v1/service-status"
        isExport = segments.last == "export"
            && (segments.count == 3 && segments[1] == "me" || segments.count == 4 && segments[1] == "diaries")
        isSignIn = segments.count == 3 && segments[1] == "auth"
        isWebhook = segments.count == 3 && segments[1] == "webhooks"
    }

    var ignoresVersion: Bool { isStatus || isExport }

    func allowedInMaintenance(_ method: HTTPRequest.Method) -> Bool {
        method == .get || method == .head || method == .options || isSignIn || isWebhook
    }
}
