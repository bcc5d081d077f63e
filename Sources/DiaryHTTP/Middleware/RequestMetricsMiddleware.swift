import Dispatch
import Hummingbird
import Metrics
import NIOConcurrencyHelpers

/// Counts requests and times them per route, method and status.
///
/// Hummingbird's `MetricsMiddleware` records after the body is written, by wrapping every
/// body in a closure. A closure body leaves Hummingbird's one-write path: the head is
/// flushed alone and the body after it, so every response would cost two `write` calls
/// and wake the client twice. Here the clock stops when the handler returns its response,
/// which every route builds in full, so only the socket write is left out.
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    private let cache = RequestMetricsCache()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let start = DispatchTime.now().uptimeNanoseconds
        let active = cache.active(request.method)
        active.increment()
        defer { active.decrement() }
        do {
            let response = try await next(request, context)
            cache.route(context.endpointPath ?? "Unknown", request.method, response.status)
                .record(since: start)
            return response
        } catch {
            let status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            let metrics = cache.route(context.endpointPath ?? "NotFound", request.method, status)
            metrics.record(since: start)
            metrics.errors.increment()
            throw error
        }
    }
}

/// The metric handles for each label set, made once: a metrics factory lookup per request
/// would build the label arrays and take the registry's lock every time.
final class RequestMetricsCache: Sendable {
    struct RouteKey: Hashable {
        let route: String
        let method: HTTPRequest.Method
        let status: HTTPResponse.Status
    }

    struct RouteMetrics: Sendable {
        let requests: Counter
        let duration: Timer
        let errors: Counter

        init(_ key: RouteKey) {
            let labels = [("http.route", key.route), ("http.request.method", key.method.rawValue)]
            let status = key.status.code.description
            let labelsWithStatus = labels + [("http.response.status_code", status)]
            requests = Counter(label: "hb.requests", dimensions: labelsWithStatus)
            duration = Timer(label: "http.server.request.duration", dimensions: labelsWithStatus, preferredDisplayUnit: .seconds)
            errors = Counter(label: "hb.request.errors", dimensions: labels + [("error.type", status)])
        }

        func record(since start: UInt64) {
            requests.increment()
            duration.recordNanoseconds(DispatchTime.now().uptimeNanoseconds - start)
        }
    }

    private let routes = NIOLockedValueBox<[RouteKey: RouteMetrics]>([:])
    private let activeByMethod = NIOLockedValueBox<[HTTPRequest.Method: Meter]>([:])

    func route(_ route: String, _ method: HTTPRequest.Method, _ status: HTTPResponse.Status) -> RouteMetrics {
        Self.cached(RouteKey(route: route, method: method, status: status), in: routes, make: RouteMetrics.init)
    }

    func active(_ method: HTTPRequest.Method) -> Meter {
        Self.cached(method, in: activeByMethod) { Meter(label: "http.server.active_requests", dimensions: [("http.request.method", $0.rawValue)]) }
    }

    private static func cached<Key: Hashable, Value>(_ key: Key, in cache: NIOLockedValueBox<[Key: Value]>, make: (Key) -> Value) -> Value {
        cache.withLockedValue { values in
            if let value = values[key] { return value }
            let value = make(key)
            values[key] = value
            return value
        }
    }
}
