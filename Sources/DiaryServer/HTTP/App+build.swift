import Hummingbird
import Logging
import PostgresClient

typealias AppRequestContext = BasicRequestContext

/// Builds the HTTP application; `serve` runs it and the tests drive it.
func buildApplication(configuration: ServerConfiguration, pool: PostgresPool, logger: Logger) -> some ApplicationProtocol {
    let router = buildRouter(pool: pool)
    return Application(
        router: router,
        configuration: ApplicationConfiguration(
            address: .hostname(configuration.host, port: configuration.port),
            serverName: "diary-server"
        ),
        services: [pool],
        logger: logger
    )
}

func buildRouter(pool: PostgresPool) -> Router<AppRequestContext> {
    let router = Router(context: AppRequestContext.self)
    router.middlewares.add(LogRequestsMiddleware(.debug))
    HealthRoutes(pool: pool).register(on: router)
    return router
}
