package import DiaryCore
import Foundation
package import Hummingbird
package import HummingbirdCore
package import Logging
package import PostgresClient
package import ServiceLifecycle
import AppleIDClient
import APNSClient
import S3Client

/// Everything `serve` runs, from one configuration: the application (`buildApplication`),
/// its workers, backups and restore points among them, and the realtime drain, which closes
/// the sockets (1001) before the server stops: a service group stops its members in reverse.
package func buildServices(configuration: ServerConfiguration, pool: PostgresPool, logger: Logger) throws -> [any Service] {
    let feed = makeChangeFeed(configuration: configuration, logger: logger)
    let app = try buildApplication(configuration: configuration, pool: pool, logger: logger, feed: feed)
    return [app, RealtimeDrain(feed: feed)]
}

/// Builds the HTTP application and its workers; `serve` runs it (`buildServices`) and the
/// tests drive it. `feed` is the realtime feed, made here unless the caller needs it too.
package func buildApplication(
    configuration: ServerConfiguration, pool: PostgresPool, logger: Logger, http: HTTP1Channel.Configuration = .init(), feed: ChangeFeed? = nil
) throws -> some ApplicationProtocol {
    let key = try TokenService.loadKey(path: configuration.auth.jwtKeyFile, dataDirectory: configuration.auth.dataDirectory, production: configuration.auth.production)
    AppMetrics.bootstrap()
    let tokens = TokenService(key: key)
    let photoLinks = PhotoLinks(key: try SecretKeyFile.photoURLs.load(
        path: configuration.photos.urlKeyFile, dataDirectory: configuration.auth.dataDirectory, production: configuration.auth.production))
    let photoFolder = configuration.photos.s3 == nil ? try FolderPhotoStore(
        root: configuration.photos.storeDirectory ?? (configuration.auth.dataDirectory as NSString).appendingPathComponent("photos")) : nil
    // Only Sign in with Apple's key makes tokens to seal: without it nothing is sealed or
    // opened, and production needs no secrets key file.
    let vault = configuration.apple.credentials == nil ? AppleTokenVault.ephemeral() : AppleTokenVault(key: try SecretKeyFile.secrets.load(
        path: configuration.apple.secretsKeyFile, dataDirectory: configuration.auth.dataDirectory, production: configuration.auth.production))
    if let backups = configuration.backups.backups {
        try FileManager.default.createDirectory(atPath: backups.options.directory, withIntermediateDirectories: true)
    }
    // Made last of what can fail: a client that is never run is never shut down.
    let outbound = OutboundHTTP(trustRoots: [configuration.apple.caFile, configuration.push.apns?.extraTrustedCAFile].compactMap { $0 })
    let apple = makeAppleAccounts(configuration: configuration, http: outbound, vault: vault, logger: logger)
    let photos = makePhotos(configuration: configuration, links: photoLinks, folder: photoFolder, http: outbound, logger: logger)
    // The one identity check, for HTTP and the realtime socket alike.
    let callers = Callers(configuration: configuration, tokens: tokens, pool: pool, photoLinks: photos.links)
    let router = buildRouter(configuration: configuration, callers: callers, apple: apple, photos: photos)
    let feed = feed ?? makeChangeFeed(configuration: configuration, logger: logger)
    let realtime = RealtimeGateway(
        feed: feed, callers: callers, options: RealtimeSocket.Options(slowConsumerGrace: configuration.slowConsumerGrace, pingPeriod: configuration.pingPeriod))
    let push = makePush(configuration: configuration, http: outbound, logger: logger)
    let closedDiaries = makeClosedDiaryWorker(configuration: configuration, photoSweeper: photos.sweeper, logger: logger)
    let keeping = WorkerService.keeping(configuration.backups, store: photos.store, logger: logger)
    return Application(
        router: router,
        server: .eventLoopBoundHTTP1(configuration: http, realtime: realtime),
        configuration: ApplicationConfiguration(
            address: .hostname(configuration.host, port: configuration.port),
            serverName: "diary-server"
        ),
        // Stopped in reverse order: the shared HTTP client after everything that calls out.
        services: [
            outbound, pool, WorkerService(pool: feed.pool, feed.run), push, WorkerService(pool: photos.sweeper.pool, photos.sweeper.run),
            WorkerService(pool: apple.revoker.pool, apple.revoker.run), WorkerService(pool: closedDiaries.pool, closedDiaries.run),
        ] + keeping,
        logger: logger
    )
}

/// The feed's queries (the log's tail, session checks, pruning) go through a pool of their
/// own, so that they never wait behind requests, nor take a request's connection.
package func makeChangeFeed(configuration: ServerConfiguration, logger: Logger) -> ChangeFeed {
    let (pool, listen) = backgroundConnections(configuration: configuration, applicationName: ChangeFeed.applicationName, logger: logger)
    return ChangeFeed(pool: pool, listenConfiguration: listen, options: configuration.realtime, logger: logger)
}

/// Push delivery and reminders share a small pool of their own, like the realtime feed's.
func makePush(configuration: ServerConfiguration, http: OutboundHTTP, logger: Logger) -> WorkerService {
    let (pool, listen) = backgroundConnections(configuration: configuration, applicationName: PushDelivery.applicationName, logger: logger)
    let push = configuration.push
    if push.apns == nil {
        logger.notice("push notifications are off; the outbox keeps them until APNs is configured", metadata: ["reason": "\(push.offReason)"])
    }
    let delivery = PushDelivery(pool: pool, listenConfiguration: listen, apns: push.apns, http: http.client, options: push.delivery, logger: logger)
    let reminders = push.runsReminders ? ReminderScheduler(pool: pool, options: push.reminders, logger: logger) : nil
    return WorkerService(pool: pool) {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await delivery.run() }
            if let reminders { group.addTask { await reminders.run() } }
        }
    }
}

/// The closed-diary worker, with a pool of its own; what it deletes, the photo sweep collects at once.
func makeClosedDiaryWorker(configuration: ServerConfiguration, photoSweeper: PhotoSweeper, logger: Logger) -> ClosedDiaryWorker {
    let (pool, listen) = backgroundConnections(configuration: configuration, applicationName: ClosedDiaryWorker.applicationName, logger: logger)
    return ClosedDiaryWorker(
        pool: pool, listenConfiguration: listen, options: configuration.closedDiaries.workerOptions,
        purged: { photoSweeper.collectSoon() }, logger: logger)
}

/// Apple's keys through the shared client, the code exchange when Sign in with Apple's key
/// is configured, and the revocation worker with a pool of its own.
func makeAppleAccounts(configuration: ServerConfiguration, http: OutboundHTTP, vault: AppleTokenVault, logger: Logger) -> AppleAccounts {
    let apple = configuration.apple
    // The key was validated when the configuration was read; a key that still fails leaves
    // codes ignored rather than the server down.
    var client: AppleIDClient?
    do {
        client = try AppleIDClient(baseURL: apple.authURL, credentials: apple.credentials, http: http.client)
    } catch {
        logger.error("Sign in with Apple's key cannot be used; authorization codes are ignored", metadata: ["error": "\(error)"])
        client = try? AppleIDClient(baseURL: apple.authURL, credentials: nil, http: http.client)
    }
    let jwksURL = configuration.auth.apple.jwksURL
    let verifier = AppleIdentityVerifier(
        configuration: configuration.auth.apple, fetchKeys: { [http] in try await AppleIDClient.keys(at: jwksURL, using: http.client) }, logger: logger)
    let (pool, listen) = backgroundConnections(configuration: configuration, applicationName: AppleTokenRevoker.applicationName, logger: logger)
    let revoker = AppleTokenRevoker(pool: pool, listenConfiguration: listen, client: client, vault: vault, options: apple.revocations, logger: logger)
    return AppleAccounts(verifier: verifier, exchanger: AppleTokenExchanger(client: client, vault: vault), revoker: revoker)
}

/// The photo store, the URL key, and the sweeper with a pool of its own.
struct Photos: Sendable {
    var store: any PhotoStore
    var links: PhotoLinks
    var sweeper: PhotoSweeper
    var logger: Logger
}

/// The folder store when one was made, else the bucket through the shared HTTP client.
func makePhotos(configuration: ServerConfiguration, links: PhotoLinks, folder: FolderPhotoStore?, http: OutboundHTTP, logger: Logger) -> Photos {
    var store: any PhotoStore
    var links = links
    if let folder {
        store = folder
    } else {
        let s3 = configuration.photos.s3!
        let bucket = S3PhotoStore(client: S3Client(configuration: s3.bucket, http: http.client, timeout: configuration.photos.storeTimeout), prefix: s3.prefix, logger: logger)
        if configuration.photos.urls == .presigned { links = links.serving(.presigned(bucket)) }
        store = bucket
    }
    let (sweeperPool, _) = backgroundConnections(configuration: configuration, applicationName: PhotoSweeper.applicationName, logger: logger)
    let sweeper = PhotoSweeper(pool: sweeperPool, store: store, options: configuration.photos.sweeper, logger: logger)
    return Photos(store: store, links: links, sweeper: sweeper, logger: logger)
}

/// Two connections and a LISTEN session for a background worker, named in pg_stat_activity.
private func backgroundConnections(
    configuration: ServerConfiguration, applicationName: String, logger: Logger
) -> (pool: PostgresPool, listen: PostgresConfiguration) {
    var database = configuration.database
    database.applicationName = applicationName
    var listen = configuration.listenDatabase
    listen.applicationName = applicationName
    let pool = PostgresPool(configuration: database, options: .init(size: 2, acquireTimeout: configuration.poolOptions.acquireTimeout), logger: logger)
    return (pool, listen)
}

/// request → metrics → client address → request log → request id → problem mapping → declared length → admission
/// → service status (under /v1) → bearer auth (the authenticated routes) → route (plan and query
/// in a repository) → response. docs/ARCHITECTURE.md, "A request's walk", lists the same order.
func buildRouter(configuration: ServerConfiguration, callers: Callers, apple: AppleAccounts, photos: Photos) -> Router<AppRequestContext> {
    let pool = callers.pool, billing = configuration.billing, serviceStatus = configuration.serviceStatus
    let closedDiaries = configuration.closedDiaries, invitePage = configuration.invitePage
    let router = Router(context: AppRequestContext.self)
    // Outermost, so it records the status the client gets, problems included.
    router.middlewares.add(RequestMetricsMiddleware())
    router.middlewares.add(ClientAddressMiddleware(trustedProxies: configuration.trustedProxies))
    router.middlewares.add(RequestLogMiddleware())
    router.middlewares.add(RequestIDMiddleware())
    router.middlewares.add(ProblemMiddleware())
    router.middlewares.add(DeclaredLengthMiddleware())
    router.middlewares.add(ConcurrencyLimitMiddleware(limit: configuration.maxConcurrentRequests))
    HealthRoutes(pool: pool).register(on: router)
    // One budget per client address for everything that tells a current invite code from any other.
    let inviteCodeAttempts = AttemptLimiter<String>(limit: invitePage.pagesPerMinute)
    InvitePageRoutes(
        lookup: InviteCodeLookup(pool: pool), page: InvitePage(links: callers.inviteLinks, configuration: invitePage), limiter: inviteCodeAttempts
    ).register(on: router)
    MetricsRoutes(pool: pool).register(on: router)
    let contract = OpenAPIDocument.text(file: configuration.openAPIFile)
    router.get("/openapi.yaml") { _, _ -> Response in
        Response(status: .ok, headers: [.contentType: "application/yaml"], body: .init(byteBuffer: ByteBuffer(string: contract)))
    }

    // Reached only without the upgrade headers: the socket itself never gets here.
    router.get("/v1/realtime") { request, _ -> Response in
        let query = request.uri.queryParameters
        if let since = query.get("since"), !ChangeCursor.isWellFormed(since) {
            throw Problem.validation(field: "since", "is not a cursor: at most \(ChangeCursor.maximumLength) base64url characters")
        }
        if (query.get("access_token")?.utf8.count ?? 0) > 4096 { throw Problem.validation(field: "access_token", "is at most 4096 characters") }
        throw Problem.webSocketEndpoint()
    }

    let auth = AuthRoutes(accounts: AccountRepository(pool: pool, tokens: callers.tokens, photoLinks: photos.links), apple: apple.verifier, appleTokens: apple.exchanger,
        devSignInEnabled: configuration.auth.devSignIn)
    let api = router.group("v1").add(middleware: ServiceStatusMiddleware(configuration: serviceStatus))
    ServiceStatusRoutes(configuration: serviceStatus, notices: ServiceNoticeRepository(pool: pool)).register(on: api)
    auth.register(public: api)

    let photoRoutes = PhotoRoutes(store: photos.store, downloads: PhotoDownloads(pool: pool, store: photos.store, links: photos.links, logger: photos.logger))
    photoRoutes.register(public: api)
    RevenueCatWebhookRoutes(configuration: billing, billing: BillingRepository(pool: pool)).register(on: api)
    AppleWebhookRoutes(
        verifier: apple.verifier, notifications: AppleNotificationRepository(pool: pool), revoker: apple.revoker, photoSweeper: photos.sweeper
    ).register(on: api)

    let authenticated = api.add(middleware: BearerAuthenticator(callers: callers)).group(context: AuthenticatedContext.self)
    auth.register(authenticated: authenticated)
    MeRoutes(photoSweeper: photos.sweeper, appleRevoker: apple.revoker, photoStore: photos.store).register(on: authenticated)
    DiaryRoutes(
        joinLimiter: AttemptLimiter(limit: 10), freePlanDiaries: billing.freePlanDiaries, previewLimiter: inviteCodeAttempts
    ).register(on: authenticated)
    EntryRoutes(photoSweeper: photos.sweeper).register(on: authenticated)
    photoRoutes.register(authenticated: authenticated)
    ChangeRoutes().register(on: authenticated)
    DeviceRoutes().register(on: authenticated)
    ExportRoutes(store: photos.store, configuration: configuration.export, closedDiaries: closedDiaries).register(on: authenticated)
    DepartureRoutes(window: closedDiaries.window, freePlanDiaries: billing.freePlanDiaries).register(on: authenticated)
    return router
}
