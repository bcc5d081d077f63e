import AsyncHTTPClient
import Crypto
import DiaryModels
import Foundation
import Hummingbird
import HummingbirdTesting
import PostgresClient
import S3Client
import Testing
import TestSupport
import _CryptoExtras
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// Drives the real application (router, middleware, repositories, PostgreSQL) in-process.
struct APIHarness: Sendable {
    /// The webhook's secret, sandbox events accepted, `couple.monthly` the couple plan.
    /// Tests of other things create diaries freely; `freePlan` has production's limit.
    static let webhookAuthorization = "Bearer test-webhook-secret-0123456789"
    static let billing = BillingConfiguration(
        webhookAuthorization: webhookAuthorization, acceptSandbox: true, coupleProducts: ["couple.monthly"], freePlanDiaries: 100
    )
    static var freePlan: BillingConfiguration {
        var billing = billing
        billing.freePlanDiaries = BillingConfiguration.defaultFreePlanDiaries
        return billing
    }

    let client: any TestClientProtocol
    let pool: PostgresPool
    let database: PostgresConfiguration
    /// Holds the server's token key (`jwt.key`), for minting tokens a test needs.
    let dataDirectory: String
    /// The server's photo store, as the test sees it (the same folder, or the same bucket and prefix).
    let store: any PhotoStore
    /// The server's realtime feed.
    let feed: ChangeFeed

    struct Reply: Sendable {
        var status: HTTPResponse.Status
        var headers: HTTPFields
        var body: Data

        var text: String { String(decoding: body, as: UTF8.self) }

        func decode<T: Decodable>(_ type: T.Type = T.self) throws -> T {
            try PostgresJSONCoding.decoder.decode(T.self, from: body)
        }

        var code: String? {
            (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["code"] as? String
        }
    }

    /// Runs `body` against a fresh database and a new application.
    static func run(
        poolSize: Int = 4, acquireTimeout: Duration = .seconds(10), statementTimeout: Duration? = nil,
        maxConcurrentRequests: Int = ServerConfiguration.defaultMaxConcurrentRequests, sharedReads: Bool = false, testing: TestingSetup = .router,
        route: DatabaseRoute = .direct, slowConsumerGrace: Duration = .seconds(10), pingPeriod: Duration = .seconds(25),
        push: PushConfiguration = PushConfiguration(), pushDelivery: PushDelivery.Options = PushDelivery.Options(),
        billing: BillingConfiguration = APIHarness.billing, serviceStatus: ServiceStatusConfiguration = ServiceStatusConfiguration(),
        export: ExportConfiguration = ExportConfiguration(), apple: AppleConfiguration = AppleConfiguration(), jwksURL: URL? = nil,
        photoStore: PhotoStoreKind = .folder, deletedPhotosKept: Duration = .zero,
        invitePage: InvitePageConfiguration = InvitePageConfiguration(), trustedProxies: TrustedProxies = TrustedProxies(),
        realtime: ChangeFeed.Options = ChangeFeed.Options(), closedDiaries: ClosedDiaryConfiguration = ClosedDiaryConfiguration(),
        _ body: @Sendable (APIHarness) async throws -> Void
    ) async throws {
        try await MigratedTemplate.withDatabase { database in
            try await run(
                on: database, poolSize: poolSize, acquireTimeout: acquireTimeout, statementTimeout: statementTimeout,
                maxConcurrentRequests: maxConcurrentRequests, sharedReads: sharedReads, testing: testing, route: route,
                slowConsumerGrace: slowConsumerGrace, pingPeriod: pingPeriod, push: push, pushDelivery: pushDelivery, billing: billing,
                serviceStatus: serviceStatus, export: export, apple: apple, jwksURL: jwksURL, photoStore: photoStore,
                deletedPhotosKept: deletedPhotosKept, invitePage: invitePage, trustedProxies: trustedProxies, realtime: realtime,
                closedDiaries: closedDiaries, body
            )
        }
    }

    /// Runs `body` with a new application on `database`, which must be migrated already.
    static func run(
        on database: PostgresConfiguration, poolSize: Int = 4, acquireTimeout: Duration = .seconds(10), statementTimeout: Duration? = nil,
        maxConcurrentRequests: Int = ServerConfiguration.defaultMaxConcurrentRequests, sharedReads: Bool = false, testing: TestingSetup = .router,
        route: DatabaseRoute = .direct, slowConsumerGrace: Duration = .seconds(10), pingPeriod: Duration = .seconds(25),
        push: PushConfiguration = PushConfiguration(), pushDelivery: PushDelivery.Options = PushDelivery.Options(),
        billing: BillingConfiguration = APIHarness.billing, serviceStatus: ServiceStatusConfiguration = ServiceStatusConfiguration(),
        export: ExportConfiguration = ExportConfiguration(), apple: AppleConfiguration = AppleConfiguration(), jwksURL: URL? = nil,
        photoStore: PhotoStoreKind = .folder, deletedPhotosKept: Duration = .zero, sharing other: APIHarness? = nil, citus: Bool = false,
        invitePage: InvitePageConfiguration = InvitePageConfiguration(), trustedProxies: TrustedProxies = TrustedProxies(),
        realtime: ChangeFeed.Options = ChangeFeed.Options(), closedDiaries: ClosedDiaryConfiguration = ClosedDiaryConfiguration(),
        _ body: @Sendable (APIHarness) async throws -> Void
    ) async throws {
        // The server's own role: no ownership, no BYPASSRLS, so every policy applies.
        var serverDatabase = database.as(TestDatabase.appRole)
        if route == .pgBouncer { serverDatabase = try TestDatabase.viaPgBouncer(serverDatabase) }
        serverDatabase.statementTimeout = statementTimeout
        let pool = PostgresPool(configuration: serverDatabase, options: .init(size: poolSize, acquireTimeout: acquireTimeout), logger: TestDatabase.logger)
        // A second instance shares the first's folder (its token and URL keys) and bucket prefix.
        let dataDirectory = other?.dataDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("diary-tests-\(UUID().uuidString)").path
        var configuration = ServerConfiguration(
            host: "127.0.0.1", port: 0, database: serverDatabase, poolOptions: .init(size: poolSize), databaseWait: .seconds(1),
            auth: AuthConfiguration(
                production: false, devSignIn: true, jwtKeyFile: nil, dataDirectory: dataDirectory,
                // `jwksURL` reads Apple's keys over HTTPS (the stand-in's), else from a file.
                apple: .init(audiences: [AppleTestKeys.audience], jwksURL: jwksURL ?? URL(string: "https://keys.invalid/")!, jwksFile: jwksURL == nil ? AppleTestKeys.shared.jwksPath : nil)
            ),
            maxConcurrentRequests: maxConcurrentRequests,
            sharedReads: sharedReads
        )
        configuration.slowConsumerGrace = slowConsumerGrace
        configuration.pingPeriod = pingPeriod
        configuration.citus = citus
        // Reminders run on the tests' own clock (ReminderTests), never the wall's.
        configuration.push = push
        configuration.push.runsReminders = false
        configuration.push.delivery = pushDelivery
        configuration.billing = billing
        configuration.serviceStatus = serviceStatus
        configuration.export = export
        configuration.apple = apple
        configuration.photos.sweeper.deletedFilesKept = deletedPhotosKept
        configuration.invitePage = invitePage
        configuration.trustedProxies = trustedProxies
        configuration.realtime = realtime
        configuration.closedDiaries = closedDiaries
        let store: any PhotoStore
        switch photoStore {
        case .folder:
            store = try FolderPhotoStore(root: (dataDirectory as NSString).appendingPathComponent("photos"))
        case .s3, .s3Presigned, .s3At:
            var bucket = try photoStore == .s3Presigned ? TestBucket.openConfiguration() : TestBucket.configuration()
            if case .s3At(let endpoint) = photoStore {
                bucket.endpoint = endpoint
                configuration.photos.storeTimeout = .seconds(2)
            }
            if photoStore == .s3Presigned { configuration.photos.urls = .presigned }
            // No "/" in it: moto checks the signature of a LIST whose prefix holds one wrongly.
            let prefix = (other?.store as? S3PhotoStore)?.prefix ?? "tests-\(UUID().uuidString.lowercased())-"
            configuration.photos.s3 = (bucket, prefix)
            store = S3PhotoStore(client: S3Client(configuration: bucket, http: .shared), prefix: prefix, logger: TestDatabase.logger)
        }
        let feed = makeChangeFeed(configuration: configuration, logger: TestDatabase.logger)
        let app = try buildApplication(configuration: configuration, pool: pool, logger: TestDatabase.logger, feed: feed)
        do {
            try await app.test(testing) { client in
                try await body(APIHarness(client: client, pool: pool, database: database, dataDirectory: dataDirectory, store: store, feed: feed))
            }
        } catch {
            try? await pool.close()
            throw error
        }
        try? await pool.close()
    }

    @discardableResult
    func call(_ method: HTTPRequest.Method, _ path: String, token: String? = nil, json: String? = nil, headers extra: HTTPFields = [:]) async throws -> Reply {
        var headers = extra
        if let token { headers[.authorization] = "Bearer \(token)" }
        if json != nil { headers[.contentType] = "application/json" }
        return try await client.execute(uri: path, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) }) { response in
            Reply(status: response.status, headers: response.headers, body: Data(buffer: response.body))
        }
    }

    func call<Body: Encodable>(_ method: HTTPRequest.Method, _ path: String, token: String? = nil, body: Body) async throws -> Reply {
        try await call(method, path, token: token, json: String(decoding: try JSONEncoder().encode(body), as: UTF8.self))
    }

    /// Runs `statement` as the superuser, beneath every policy: for setting up and checking state.
    @discardableResult
    func asSuperuser(_ statement: PostgresQuery) async throws -> PostgresRows {
        try await TestDatabase.withPool(database, size: 1) { try await $0.query(statement) }
    }

    /// Signs in a development user and returns their session.
    func signIn(_ name: String) async throws -> Session {
        let reply = try await call(.post, "/v1/auth/dev", body: DevSignInRequest(name: name))
        guard reply.status == .ok else { throw HarnessError("sign-in of \(name) answered \(reply.status): \(reply.text)") }
        return try reply.decode()
    }

    func createDiary(_ name: String, type: DiaryType, token: String) async throws -> Diary {
        let reply = try await call(.post, "/v1/diaries", token: token, body: CreateDiaryRequest(name: name, type: type))
        guard reply.status == .created else { throw HarnessError("create diary answered \(reply.status): \(reply.text)") }
        return try reply.decode()
    }

    func join(_ code: String, token: String) async throws -> Reply {
        try await call(.post, "/v1/diaries/join", token: token, body: JoinDiaryRequest(inviteCode: code))
    }

    func post(_ content: String, in diary: UUID, token: String, id: UUID? = nil) async throws -> Reply {
        try await call(.post, "/v1/diaries/\(diary)/entries", token: token, body: CreateEntryRequest(id: id, content: content))
    }

    /// The folder the server keeps photos in (`PHOTO_STORE_DIR` unset).
    var photoStore: String { (dataDirectory as NSString).appendingPathComponent("photos") }

    /// `POST /v1/photos` with `bytes` as the body; `contentLength` nil sends none.
    /// An image as the body, to `POST /v1/photos` unless told otherwise (`PUT /v1/me/photo`).
    func upload(
        _ bytes: [UInt8], type: String = "image/jpeg", token: String, contentLength: String? = "exact", headers extra: HTTPFields = [:],
        to path: String = "/v1/photos", method: HTTPRequest.Method = .post
    ) async throws -> Reply {
        var headers = extra
        headers[.authorization] = "Bearer \(token)"
        headers[.contentType] = type
        if let contentLength { headers[.contentLength] = contentLength == "exact" ? String(bytes.count) : contentLength }
        return try await client.execute(uri: path, method: method, headers: headers, body: ByteBuffer(bytes: bytes)) { response in
            Reply(status: response.status, headers: response.headers, body: Data(buffer: response.body))
        }
    }

    /// GET of a photo URL, with extra headers (If-None-Match, Range).
    func fetch(_ url: String, headers: HTTPFields = [:]) async throws -> Reply {
        try await client.execute(uri: url, method: .get, headers: headers, body: nil) { response in
            Reply(status: response.status, headers: response.headers, body: Data(buffer: response.body))
        }
    }
}

struct HarnessError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
