import DiaryCore
import Foundation
package import Hummingbird
package import HummingbirdCore
package import Logging
package import PostgresClient

/// Builds the HTTP application; `serve` runs it and the tests drive it.
package func buildApplication(
    configuration: ServerConfiguration, pool: PostgresPool, logger: Logger, http: HTTP1Channel.Configuration = .init()
) throws -> some ApplicationProtocol {
    let key = try TokenService.loadKey(path: configuration.auth.jwtKeyFile, dataDirectory: configuration.auth.dataDirectory, production: configuration.auth.production)
    AppMetrics.bootstrap()
    let router = buildRouter(
        pool: pool,
        maxConcurrentRequests: configuration.maxConcurrentRequests,
        tokens: TokenService(key: key),
        apple: AppleIdentityVerifier(configuration: configuration.auth.apple, logger: logger),
        devSignIn: configuration.auth.devSignIn,
        sharedReads: configuration.sharedReads
    )
    return Application(
        router: router,
        server: .eventLoopBoundHTTP1(configuration: http),
        configuration: ApplicationConfiguration(
            address: .hostname(configuration.host, port: configuration.port),
            serverName: "diary-server"
        ),
        services: [pool],
        logger: logger
    )
}

/// request → metrics → problem mapping → admission → auth → route (plan and query in a repository) → response.
func buildRouter(
    pool: PostgresPool, maxConcurrentRequests: Int, tokens: TokenService, apple: AppleIdentityVerifier, devSignIn: Bool, sharedReads: Bool = false
) -> Router<AppRequestContext> {
    let router = Router(context: AppRequestContext.self)
    // Outermost, so it records the status the client gets, problems included.
    router.middlewares.add(RequestMetricsMiddleware())
    router.middlewares.add(LogRequestsMiddleware(.info))
    router.middlewares.add(RequestIDMiddleware())
    router.middlewares.add(ProblemMiddleware())
    router.middlewares.add(ConcurrencyLimitMiddleware(limit: maxConcurrentRequests))
    HealthRoutes(pool: pool).register(on: router)
    MetricsRoutes(pool: pool).register(on: router)
    router.get("/openapi.yaml") { _, _ -> Response in
        Response(status: .ok, headers: [.contentType: "application/yaml"], body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.text)))
    }

    let auth = AuthRoutes(accounts: AccountRepository(pool: pool, tokens: tokens), apple: apple, devSignInEnabled: devSignIn)
    let api = router.group("v1")
    auth.register(public: api)

    let authenticated = api.add(middleware: BearerAuthenticator(tokens: tokens, pool: pool, readPlacement: sharedReads ? .sharedConnection : .ownConnection)).group(context: AuthenticatedContext.self)
    auth.register(authenticated: authenticated)
    MeRoutes().register(on: authenticated)
    DiaryRoutes(joinLimiter: JoinAttemptLimiter()).register(on: authenticated)
    EntryRoutes().register(on: authenticated)
    return router
}
