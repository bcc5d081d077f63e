import ArgumentParser
import DiaryCore
import DiaryHTTP
import Hummingbird
import Logging
import ServiceLifecycle
import UnixSignals
import PostgresClient

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the HTTP API.",
        discussion: """
            Settings come from the environment; a flag overrides its variable.
              DATABASE_URL   postgres:// URL of the database (required)
              HOST           address to bind (default 127.0.0.1)
              PORT           port to bind (default 8080)
              DB_POOL_SIZE   database connections (default 8)
              DB_ACQUIRE_TIMEOUT_MS     wait for a free connection before answering 503 (default 2000)
              DB_SHARED_READS           1 queues read-only requests' transactions on a few shared connections (default 0)
              DB_STATEMENT_TIMEOUT_MS   longest a statement may run before it is cancelled (default 5000)
              DB_PREPARED_STATEMENTS    0 sends every statement unnamed, for PgBouncer's transaction mode (default 1)
              DATABASE_LISTEN_URL       a direct connection for LISTEN, where DATABASE_URL goes through PgBouncer
              DB_CITUS                  1 when DATABASE_URL is a Citus coordinator: a write's answer is read on the diary's worker (default 0)
              MAX_CONCURRENT_REQUESTS   requests served at once; more get 503 at once (default 256)
              LOG_LEVEL      trace, debug, info, notice, warning, error or critical (default info)
              DIARY_ENV           "production" forbids dev sign-in and generated keys
              DIARY_DEV_AUTH      1 enables POST /v1/auth/dev (never in production)
              DIARY_JWT_KEY_FILE  key for access tokens (development generates one in DIARY_DATA_DIR)
              DIARY_URL_KEY_FILE  key for signed photo URLs (development generates one in DIARY_DATA_DIR)
              DIARY_OPENAPI_FILE  the contract GET /openapi.yaml serves (default openapi.yaml here)
              PUBLIC_URL          this server's address as apps and browsers reach it; invite
                                  links are PUBLIC_URL/i/<code> (default http://HOST:PORT)
              APP_STORE_URL       the app's App Store page, the invite page's second button
                                  (default the App Store's search for ずっと日記)
              APPLE_APP_ID        TEAMID.bundle.id: /.well-known/apple-app-site-association
                                  claims /i/* for it (unset: 404, links open the page)
              APP_URL_SCHEME      the app's URL scheme; the invite page opens
                                  <scheme>://join?code=<code> (default zuttonikki)
              TRUSTED_PROXIES     comma-separated addresses and CIDR ranges whose
                                  X-Forwarded-For names the client (default none)
              PHOTO_STORE         folder (default) or s3: where photos' bytes are kept
              PHOTO_STORE_DIR     the folder that keeps photos (default DIARY_DATA_DIR/photos)
              PHOTO_DELETED_KEEP_HOURS  hours a deleted photo's file stays, for restores to a
                                  point before the deletion (default 0: removed at once)
              S3_ENDPOINT, S3_REGION, S3_BUCKET, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY (or
              S3_SECRET_ACCESS_KEY_FILE)   the bucket, with PHOTO_STORE=s3 (all required)
              S3_PATH_STYLE       1 for https://host/bucket/key (MinIO, R2, Supabase)
              S3_PREFIX           prepended to every object's key (default none)
              PHOTO_URLS          server (default): this server streams photos; presigned: the
                                  bucket does, by presigned GET URLs (PHOTO_STORE=s3 only)
              REVENUECAT_WEBHOOK_AUTH     the Authorization header RevenueCat's webhook sends (required
                                          in production; unset, the webhook answers 404)
              REVENUECAT_ACCEPT_SANDBOX   1 applies SANDBOX events (default 1, 0 in production)
              PREMIUM_COUPLE_PRODUCT_IDS  comma-separated products that make the partner premium too
              FREE_PLAN_DIARIES           diaries a free user may create (default 1)
              MAINTENANCE_MODE    1 refuses writes with 503 maintenance; reads, exports, sign-in
                                  and webhooks go on
              MINIMUM_APP_VERSION an X-App-Version below it gets 426 upgrade_required (x.y.z)
              EXPORTS_PER_DAY     exports one user may start per UTC day (default 10)
              CONCURRENT_EXPORTS  exports streaming at once; each holds a database connection
                                  (default 4, or half of DB_POOL_SIZE if less)
              CLOSED_DIARY_RETENTION_DAYS  days a closed diary (its last member left) is kept for
                                  its former members to restore, and a member who left may
                                  export their own entries of it (default 30)
              CLOSED_DIARY_RETENTION_SECONDS  the same window in seconds, for tests that watch a
                                  purge; refused in production
              CLOSED_DIARY_ROUND_SECONDS  how often the closed-diary worker looks for deletion
                                  dates that arrived and closes no notification told (default 600)
              BACKUP_DIR          turns automatic backups on: one instance at a time backs up
                                  there and verifies (as MIGRATION_DATABASE_URL, else DATABASE_URL)
              RESTORE_POINT_DATABASE_URL  a superuser's connection: turns scheduled restore
                                  points on, on a Citus cluster every node's at once (docs/cluster.md,
                                  "Restoring a cluster to one moment")
              BACKUP_INTERVAL_HOURS  hours between backups or restore points (default 24)
              BACKUP_KEEP         backups kept (default 7)
              PG_DUMP, PG_RESTORE the tools (default: found on PATH)
              BACKUP_SCRATCH_DATABASE_URL  where verification restores (default: a scratch
                                  database made through the owner's connection)
              APPLE_AUDIENCE      comma-separated bundle ids accepted in Apple identity tokens
                                  and Apple's notifications
              APPLE_AUTH_URL      Apple's REST API (default https://appleid.apple.com)
              APPLE_JWKS_URL      Apple's keys (default APPLE_AUTH_URL/auth/keys)
              APPLE_JWKS_FILE     read Apple's keys from a file instead
              APPLE_TEAM_ID, APPLE_KEY_ID, APPLE_PRIVATE_KEY_FILE  the Sign in with Apple key
                                  (.p8): with them, sign-in's authorization codes are exchanged
                                  and a deleted account's Apple token is revoked
              APPLE_CLIENT_ID     client_id at Apple (default the first APPLE_AUDIENCE)
              APPLE_CA_FILE       an extra trusted CA in PEM for Apple's API (tests)
              DIARY_SECRETS_KEY_FILE  key sealing Apple tokens at rest (development generates
                                  one in DIARY_DATA_DIR)
              APNS_KEY_FILE       the APNs auth key (.p8); with APNS_KEY_ID, APNS_TEAM_ID and
                                  APNS_TOPIC (the bundle id) it turns push notifications on
              APNS_ENDPOINT       replaces Apple's hosts (tests, proxies)
              APNS_CA_FILE        an extra trusted CA in PEM (tests)
              PUSH_LEASE_SECONDS  how long a notification being sent is held before another
                                  server may send it, should this one die (default 30)
            """
    )

    @OptionGroup var database: DatabaseOptions

    @Option(help: "Address to bind (default: $HOST or 127.0.0.1).")
    var host: String?

    @Option(help: "Port to bind (default: $PORT or 8080).")
    var port: Int?

    @Option(name: .customLong("pool-size"), help: "Database connections (default: $DB_POOL_SIZE or 8).")
    var poolSize: Int?

    func run() async throws {
        let logger = AppLogger.make(label: "diary-server")
        var configuration: ServerConfiguration
        do {
            configuration = try ServerConfiguration.fromEnvironment(host: host, port: port, poolSize: poolSize, database: database)
        } catch {
            // A setting out of range, or a tool a setting needs missing (BACKUP_DIR's pg_dump).
            logger.critical("invalid configuration", metadata: ["reason": "\(error)"])
            throw ExitCode.failure
        }
        let pool = PostgresPool(configuration: configuration.database, options: configuration.poolOptions, logger: logger)
        do {
            try await DatabaseStartup.waitUntilReachable(pool, limit: configuration.databaseWait, logger: logger)
        } catch {
            logger.critical("cannot start", metadata: ["reason": "\(error)"])
            try? await pool.close()
            throw ExitCode.failure
        }
        logger.info("starting", metadata: [
            "address": "\(configuration.host):\(configuration.port)", "database": "\(configuration.database)",
            "poolSize": "\(configuration.poolOptions.size)", "preparedStatements": "\(configuration.database.preparedStatements)",
        ])
        // Last of what can fail: the application holds the shared HTTP client, which only
        // running it shuts down.
        let services: [any Service]
        do {
            services = try buildServices(configuration: configuration, pool: pool, logger: logger)
        } catch {
            logger.critical("cannot start", metadata: ["reason": "\(error)"])
            try? await pool.close()
            throw ExitCode.failure
        }
        try await ServiceGroup(configuration: .init(
            services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger
        )).run()
    }
}
