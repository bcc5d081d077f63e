import DiaryCore
import Foundation
import Metrics
import PostgresClient
import Prometheus

/// The process's metrics, exported in Prometheus text format at `GET /metrics`.
///
/// swift-metrics can be bootstrapped once per process, so the registry is a process-wide
/// constant; every application built in the process (the tests build many) shares it.
enum AppMetrics {
    static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Fine buckets at the low end: the targets are single-digit milliseconds.
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5),
        ]
        factory.nameAndLabelSanitizer = { name, labels in
            (prometheusName(name), labels.map { (prometheusLabel($0.0), $0.1) })
        }
        MetricsSystem.bootstrap(factory)
        return registry
    }()

    /// Hummingbird names its metrics after OpenTelemetry, with dots; Prometheus allows none.
    private static func prometheusName(_ name: String) -> String {
        switch name {
        case "hb.requests": "http_requests_total"
        case "http.server.request.duration": "http_request_duration_seconds"
        case "hb.request.errors": "http_request_errors_total"
        case "http.server.active_requests": "http_active_requests"
        default: name.replacingOccurrences(of: ".", with: "_")
        }
    }

    private static func prometheusLabel(_ label: String) -> String {
        switch label {
        case "http.route": "route"
        case "http.request.method": "method"
        case "http.response.status_code": "status"
        case "error.type": "status"
        default: label.replacingOccurrences(of: ".", with: "_")
        }
    }

    /// Makes sure the backend is in place before the first metric is created.
    static func bootstrap() {
        _ = registry
    }

    /// A database error, labelled by its SQLSTATE class (the first two characters), which
    /// keeps the label set small. Errors the client library raises without a SQLSTATE take
    /// the class that names them: a lost or refused connection 08 (connection exception), a
    /// full pool 53 (insufficient resources), anything else XX (internal error).
    static func recordDatabaseError(_ error: PostgresError) {
        let errorClass: String
        if let sqlState = error.sqlState {
            errorClass = sqlState.errorClass
        } else {
            switch error.kind {
            case .connectionFailure, .poolClosed: errorClass = "08"
            case .poolExhausted: errorClass = "53"
            default: errorClass = "XX"
            }
        }
        Counter(label: "db_errors_total", dimensions: [("class", errorClass)]).increment()
    }

    /// A refusal the database gives by design (a wrong invite code, a full diary: the app's
    /// own ZN SQLSTATEs), by problem code: expected answers, not errors.
    static func recordDatabaseRefusal(_ code: Refusal) {
        Counter(label: "db_refusals_total", dimensions: [("code", code.rawValue)]).increment()
    }

    static func recordRateLimitRejection(_ limit: String) {
        Counter(label: "rate_limit_rejections_total", dimensions: [("limit", limit)]).increment()
    }

    static func recordRealtimeSocket(opened: Bool) {
        if opened { realtimeSockets.increment() } else { realtimeSockets.decrement() }
    }

    static func recordRealtimeEvents(_ count: Int) {
        guard count > 0 else { return }
        Counter(label: "realtime_events_sent_total", dimensions: []).increment(by: count)
    }

    static func recordRealtimeClose(_ closing: RealtimeSocket.Closing) {
        Counter(label: "realtime_closes_total", dimensions: [("code", String(closing.number))]).increment()
    }

    private static let realtimeSockets = Meter(label: "realtime_sockets", dimensions: [])

    static func recordPool(_ statistics: PostgresPool.Statistics) {
        Gauge(label: "db_pool_connections", dimensions: [("state", "in_use")]).record(statistics.inUse)
        Gauge(label: "db_pool_connections", dimensions: [("state", "idle")]).record(statistics.idle)
        Gauge(label: "db_pool_waiting", dimensions: []).record(statistics.waiting)
        Gauge(label: "db_pool_shared_pipelines", dimensions: []).record(statistics.sharedPipelines)
        Gauge(label: "db_round_trips", dimensions: []).record(statistics.roundTrips)
    }

    /// The text a scrape returns, with the pool's gauges as of now.
    static func exposition(pool: PostgresPool) -> [UInt8] {
        recordPool(pool.statistics)
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 * 1024)
        registry.emit(into: &buffer)
        return buffer
    }
}
