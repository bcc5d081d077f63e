package import AsyncHTTPClient
import NIOCore
import NIOSSL
package import ServiceLifecycle

/// The process's one HTTP client, for every call out (APNs, Apple's REST API and keys): one
/// connection pool per host, HTTP/2 where the host offers it. As a service it lives until
/// the server shuts down, and then shuts the client down after the services that use it
/// (list it before them).
package struct OutboundHTTP: Service {
    package let client: HTTPClient

    /// `trustRoots`: extra CA files in PEM, for stand-ins and proxies.
    package init(trustRoots: [String]) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if !trustRoots.isEmpty { tls.additionalTrustRoots = trustRoots.map { .file($0) } }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        configuration.timeout = .init(connect: .seconds(5), read: .seconds(30))
        client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
    }

    package func run() async throws {
        try? await gracefulShutdown()
        try await client.shutdown()
    }
}
