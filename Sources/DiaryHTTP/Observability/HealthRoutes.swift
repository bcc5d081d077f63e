import Hummingbird
import Logging
import PostgresClient

/// Liveness and readiness, for load balancers and orchestrators.
struct HealthRoutes<Context: RequestContext> {
    let pool: PostgresPool

    func register(on router: Router<Context>) {
        // Liveness: answers without touching the database, so a slow database never gets the process killed.
        // HEAD answers as GET does, without the body: some load balancers probe with it.
        for method in [HTTPRequest.Method.get, .head] {
            router.on("/health", method: method) { _, _ -> Response in
                Self.status("ok", withBody: method == .get)
            }
            router.on("/ready", method: method) { _, context -> Response in
                do {
                    try await pool.query("select 1")
                } catch {
                    context.logger.warning("not ready: database round trip failed", metadata: ["error": "\(error)"])
                    throw Problem.serviceUnavailable("the database is not reachable")
                }
                return Self.status("ready", withBody: method == .get)
            }
        }
    }

    /// `{"status": …}`; for HEAD, its headers alone, Content-Length included.
    static func status(_ value: String, withBody: Bool) -> Response {
        let body = ByteBuffer(string: #"{"status":"\#(value)"}"#)
        var headers: HTTPFields = [.contentType: "application/json"]
        if !withBody { headers[.contentLength] = String(body.readableBytes) }
        return Response(status: .ok, headers: headers, body: withBody ? .init(byteBuffer: body) : .init())
    }
}
