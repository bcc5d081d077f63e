import Hummingbird
import Logging

/// Logs each request's method, path and client address (`ClientAddressMiddleware`). Never the
/// query: it may carry an access token (`/v1/realtime?access_token=…`, for clients that cannot
/// set headers).
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        context.logger.info("Request", metadata: [
            "hb.request.path": .string(request.uri.path),
            "hb.request.method": .string(request.method.rawValue),
            "client.address": .string(context.clientAddress ?? "unknown"),
        ])
        return try await next(request, context)
    }
}
