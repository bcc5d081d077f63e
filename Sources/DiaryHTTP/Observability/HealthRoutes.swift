import Hummingbird
import Logging
import PostgresClient

/// Liveness and readiness, for load balancers and orchestrators.
struct HealthRoutes<Context: RequestContext> {
    let pool: PostgresPool

    func register(on router: Router<Context>) {
        // Liveness: answers without touching the database, so a slow database never gets the process killed.
        router.get("/health") { _, _ -> Response in
            Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
        }
        router.get("/ready") { _, context -> Response in
            do {
                try await pool.query("select 1")
            } catch {
                context.logger.warning("not ready: database round trip failed", metadata: ["error": "\(error)"])
                throw Problem.serviceUnavailable("the database is not reachable")
            }
            return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ready"}"#)))
        }
    }
}
