import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdTesting
import NIOConcurrencyHelpers
import NIOCore
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

@Suite("Response writes")
struct ResponseWriteTests {
    /// Counts the flushes that reach the socket from the HTTP layer, across connections.
    final class FlushCounter: ChannelOutboundHandler, RemovableChannelHandler {
        // Only counted, never unwrapped: whatever the HTTP layer writes passes through.
        typealias OutboundIn = Any
        let flushes: NIOLockedValueBox<Int>

        init(flushes: NIOLockedValueBox<Int>) {
            self.flushes = flushes
        }

        func flush(context: ChannelHandlerContext) {
            flushes.withLockedValue { $0 += 1 }
            context.flush()
        }
    }

    @Test("a response leaves in one flush, head and body together: /health, a problem, a JSON answer from the database")
    func oneFlushPerResponse() async throws {
        try await MigratedTemplate.withDatabase { database in
            let serverDatabase = database.as(TestDatabase.appRole)
            var configuration = HealthRouteTests.configuration(database: serverDatabase)
            configuration.auth.devSignIn = true
            let pool = PostgresPool(configuration: serverDatabase, options: .init(size: 2), logger: TestDatabase.logger)
            let flushes = NIOLockedValueBox(0)
            let http = HTTP1Channel.Configuration(additionalChannelHandlers: [FlushCounter(flushes: flushes)])
            let app = try buildApplication(configuration: configuration, pool: pool, logger: TestDatabase.logger, http: http)
            try await app.test(.live) { client in
                let requests: [(String, HTTPRequest.Method, String?, HTTPResponse.Status)] = [
                    ("/health", .get, nil, .ok),
                    ("/v1/nowhere", .get, nil, .notFound),
                    ("/v1/auth/dev", .post, #"{"name":"aiko"}"#, .ok),
                ]
                for (path, method, json, status) in requests {
                    let before = flushes.withLockedValue { $0 }
                    let headers: HTTPFields = json == nil ? [:] : [.contentType: "application/json"]
                    try await client.execute(uri: path, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) }) { response in
                        #expect(response.status == status, "\(path)")
                        #expect(response.body.readableBytes > 0, "\(path)")
                    }
                    // Two flushes mean two writes: the client is woken for the head, then again for the body.
                    #expect(flushes.withLockedValue { $0 } - before == 1, "\(method) \(path)")
                }
            }
            try await pool.close()
        }
    }
}
