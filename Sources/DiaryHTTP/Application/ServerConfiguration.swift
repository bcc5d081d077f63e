package import DiaryCore
package import Foundation
package import PostgresClient

/// Everything `serve` needs. `DiaryServer` reads it from the environment and flags, once.
package struct ServerConfiguration: Sendable {
    package var host: String
    package var port: Int
    package var database: PostgresConfiguration
    /// For LISTEN, which needs a session of its own: a direct connection even where
    /// `database` goes through a transaction pooler (`DATABASE_LISTEN_URL`, default DATABASE_URL).
    package var listenDatabase: PostgresConfiguration
    package var poolOptions: PostgresPool.Options
    /// How long start-up keeps retrying an unreachable database before giving up.
    package var databaseWait: Duration
    package var auth: AuthConfiguration
    /// Requests worked on at once; the rest get 503 at the door (see ConcurrencyLimitMiddleware).
    package var maxConcurrentRequests: Int = ServerConfiguration.defaultMaxConcurrentRequests
    /// Read-only transactions queue on the pool's shared connections (`DB_SHARED_READS=1`).
    /// Off by default: it gains throughput under load, but a request queued behind a slow
    /// one waits for it, which raises the tail latency.
    package var sharedReads = false
    /// `DB_CITUS=1`: the database is a Citus coordinator (`RequestScope.Database.citus`).
    package var citus = false
    /// The realtime feed's limits and intervals (sockets per user, polling, session checks).
    package var realtime = ChangeFeed.Options()
    /// How long a realtime socket's buffer may stay full before it is closed with 4408.
    package var slowConsumerGrace: Duration = .seconds(10)
    /// How often a realtime socket is pinged; one that answers nothing by the next ping closes with 1001.
    package var pingPeriod: Duration = .seconds(25)
    /// APNs, the push outbox and the reminder clock.
    package var push = PushConfiguration()
    /// The photo store, the URL key and the sweeper.
    package var photos = PhotoConfiguration()
    /// RevenueCat's webhook and the free plan's limits.
    package var billing = BillingConfiguration()
    /// Maintenance and the minimum app version.
    package var serviceStatus = ServiceStatusConfiguration()
    /// Exports' limits, and whether backups run.
    package var export = ExportConfiguration()
    /// The departures' window and the closed-diary worker's round.
    package var closedDiaries = ClosedDiaryConfiguration()
    /// Automatic backups and restore points beside the API.
    package var backups = BackupConfiguration()
    /// Sign in with Apple's REST API: code exchange and token revocation.
    package var apple = AppleConfiguration()
    /// `DIARY_OPENAPI_FILE`: the contract served at /openapi.yaml; nil looks in the working
    /// directory, then beside the sources (`OpenAPIDocument`).
    package var openAPIFile: String?
    /// `PUBLIC_URL`: the server's address as apps and browsers reach it, which invite links
    /// start with; nil is this server's own, `http://HOST:PORT` (development).
    package var publicURL: URL?

    /// The app the invite page opens, and the app-site association.
    package var invitePage = InvitePageConfiguration()
    /// `TRUSTED_PROXIES`: whose X-Forwarded-For names the client (`TrustedProxies`).
    package var trustedProxies = TrustedProxies()

    /// The invite links this server mints and reads.
    package var inviteLinks: InviteLinks {
        InviteLinks(publicURL: publicURL ?? URL(string: "http://\(host):\(port)") ?? ServerConfiguration.developmentPublicURL)
    }

    package init(
        host: String, port: Int, database: PostgresConfiguration, listenDatabase: PostgresConfiguration? = nil,
        poolOptions: PostgresPool.Options, databaseWait: Duration,
        auth: AuthConfiguration, maxConcurrentRequests: Int = ServerConfiguration.defaultMaxConcurrentRequests, sharedReads: Bool = false
    ) {
        self.host = host
        self.port = port
        self.database = database
        self.listenDatabase = listenDatabase ?? database
        self.poolOptions = poolOptions
        self.databaseWait = databaseWait
        self.auth = auth
        self.maxConcurrentRequests = maxConcurrentRequests
        self.sharedReads = sharedReads
    }

    /// The address invite links start with when nothing else is known.
    package static let developmentPublicURL = URL(string: "http://127.0.0.1:8080")!
    package static let defaultHost = "127.0.0.1"
    package static let defaultPort = 8080
    package static let defaultPoolSize = 8
    package static let maximumPoolSize = 200
    package static let defaultMaxConcurrentRequests = 256
    package static let defaultAcquireTimeoutMilliseconds = 2000
    package static let defaultStatementTimeoutMilliseconds = 5000
}
