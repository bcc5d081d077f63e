import DiaryCore
import Hummingbird
import Logging

/// Probes are never refused. A file constant: a generic type cannot store a static, and a
/// computed one built the set on every request.
private let exemptPaths: Set<String> = ["/health", "/ready", "/metrics"]

/// Admission control at the door: at most `limit` requests are worked on at once, and
/// the rest are turned away at once with 503 and Retry-After.
///
/// Without it, a burst far past capacity queues on the connection pool, every request
/// waits, memory grows with the queue, and the ones that finally time out were all paid
/// for. Refusing early keeps the accepted requests as fast as they are at capacity.
/// Health and metrics are never refused, so an overloaded server is not taken for a dead one.
struct ConcurrencyLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    private let inFlight: InFlightLimit

    init(limit: Int) {
        inFlight = InFlightLimit(limit: limit)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if exemptPaths.contains(request.uri.path) {
            return try await next(request, context)
        }
        guard inFlight.tryEnter() else {
            AppMetrics.recordRateLimitRejection("concurrency")
            context.logger.notice("request refused: concurrency limit reached", metadata: ["limit": "\(inFlight.limit)", "path": "\(request.uri.path)"])
            throw Problem.serviceUnavailable("the server is at capacity; retry shortly", code: .overloaded)
        }
        defer { inFlight.leave() }
        return try await next(request, context)
    }
}
