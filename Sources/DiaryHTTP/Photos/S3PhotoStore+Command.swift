import AsyncHTTPClient
package import DiaryCore
package import Logging
package import S3Client

/// The bucket's store for a command (`photos copy-to-store`), over an HTTP client of its own
/// that lives until `body` returns.
package func withS3PhotoStore<Result: Sendable>(
    _ s3: (bucket: S3Configuration, prefix: String), logger: Logger, _ body: (S3PhotoStore) async throws -> Result
) async throws -> Result {
    let outbound = OutboundHTTP(trustRoots: [])
    let store = S3PhotoStore(client: S3Client(configuration: s3.bucket, http: outbound.client), prefix: s3.prefix, logger: logger)
    do {
        let result = try await body(store)
        try await outbound.client.shutdown()
        return result
    } catch {
        try? await outbound.client.shutdown()
        throw error
    }
}
