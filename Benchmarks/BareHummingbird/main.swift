// The yardstick for /health in Benchmarks/endpoints.sh: Hummingbird 2 with nothing added.
// No middleware, the same route and the same answer as diary-server's /health, on the
// address and port given: bare-hummingbird HOST PORT.
import Hummingbird

let arguments = CommandLine.arguments
let host = arguments.count > 1 ? arguments[1] : "127.0.0.1"
let port = arguments.count > 2 ? Int(arguments[2]) ?? 8080 : 8080

let router = Router()
router.get("/health") { _, _ -> Response in
    Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: #"{"status":"ok"}"#)))
}
let app = Application(router: router, configuration: .init(address: .hostname(host, port: port)))
try await app.runService()
