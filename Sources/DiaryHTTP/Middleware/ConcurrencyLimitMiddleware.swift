import Hummingbird
import Logging
import NIOConcurrencyHelpers

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
    let limit: Int
    private let inFlight = NIOLockedValueBox(0)

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if exemptPaths.contains(request.uri.path) {
            return try await next(request, context)
        }
        let admitted = inFlight.withLockedValue { count -> Bool in
            guard count < limit else { return false }
            count += 1
            return true
        }
        guard admitted else {
            AppMetrics.recordRateLimitRejection("concurrency")
            context.logger.notice("request refused: concurrency limit reached", metadata: ["limit": "\(limit)", "path": "\(request.uri.path)"])
            throw Problem.serviceUnavailable("the server is at capacity; retry shortly", code: "overloaded")
        }
        defer { inFlight.withLockedValue { $0 -= 1 } }
        return try await next(request, context)
    }
}
