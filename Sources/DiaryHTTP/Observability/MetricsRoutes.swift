import Hummingbird
import PostgresClient

/// `GET /metrics` in Prometheus text format, for scraping from inside the deployment.
struct MetricsRoutes<Context: RequestContext> {
    let pool: PostgresPool

    func register(on router: Router<Context>) {
        router.get("/metrics") { _, _ -> Response in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: AppMetrics.exposition(pool: pool)))
            )
        }
    }
}
