import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

@Suite("Health and readiness")
struct HealthRouteTests {
    static func configuration(database: PostgresConfiguration) -> ServerConfiguration {
        ServerConfiguration(host: "127.0.0.1", port: 0, database: database, poolOptions: .init(size: 2, acquireTimeout: .seconds(1)), databaseWait: .seconds(1),
                            auth: AuthConfiguration(production: false, devSignIn: false, jwtKeyFile: nil,
                                                    dataDirectory: FileManager.default.temporaryDirectory.appendingPathComponent("diary-health-\(UUID().uuidString)").path,
                                                    apple: .init(audiences: [], jwksURL: URL(string: "https://keys.invalid/")!)))
    }

    @Test("/health and /ready answer 200 with a database")
    func healthy() async throws {
        try await MigratedTemplate.withDatabase { database in
            let pool = PostgresPool(configuration: database, options: .init(size: 2), logger: TestDatabase.logger)
            let app = try buildApplication(configuration: Self.configuration(database: database), pool: pool, logger: TestDatabase.logger)
            try await app.test(.router) { client in
                try await client.execute(uri: "/health", method: .get) { response in
                    #expect(response.status == .ok)
                }
                try await client.execute(uri: "/ready", method: .get) { response in
                    #expect(response.status == .ok)
                }
                // Dev sign-in is off in this configuration: the route does not exist.
                try await client.execute(uri: "/v1/auth/dev", method: .post, headers: [.contentType: "application/json"], body: ByteBuffer(string: #"{"name":"x"}"#)) { response in
                    #expect(response.status == .notFound)
                }
            }
            try await pool.close()
        }
    }

    @Test("/ready answers 503 problem+json when the database is unreachable; /health stays 200")
    func unready() async throws {
        var database = try TestDatabase.adminConfiguration()
        database.host = "127.0.0.1"
        database.port = 1
        let pool = PostgresPool(configuration: database, options: .init(size: 1), logger: TestDatabase.logger)
        let app = try buildApplication(configuration: Self.configuration(database: database), pool: pool, logger: TestDatabase.logger)
        try await app.test(.router) { client in
            try await client.execute(uri: "/ready", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                #expect(response.headers[.contentType] == "application/problem+json")
                #expect(response.headers[.retryAfter] != nil)
                let body = try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any]
                #expect(body?["code"] as? String == "service_unavailable")
                #expect(body?["status"] as? Int == 503)
            }
            try await client.execute(uri: "/health", method: .get) { response in
                #expect(response.status == .ok)
            }
        }
        try await pool.close()
    }
}
