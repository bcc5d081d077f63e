import DiaryAPI
public import Foundation
public import OpenAPIRuntime
import OpenAPIURLSession
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The app's one way to the diary server: sign-in and tokens, diaries and entries, photos,
/// push devices, the account and the service's status, each call typed from the contract.
///
/// Every call is `async` and throws `DiaryError` for what the server refused (its `Problem`
/// and stable code) or transport errors as the platform's HTTP client throws them. Create one
/// client per server and share it: it is `Sendable`, and concurrent calls share one token refresh.
public final class DiaryClient: Sendable {
    /// Where the server is and how the client calls it.
    public struct Configuration: Sendable {
        /// The server's base URL, such as `https://api.example.com`.
        public var serverURL: URL
        /// The app's version (`CFBundleShortVersionString`), sent as `X-App-Version` so the
        /// server can ask an old app to update; nil sends none.
        public var appVersion: String?
        /// Where the session is kept between launches.
        public var sessionStorage: any SessionStorage
        /// The URLSession both calls and the realtime socket go through, on every platform;
        /// nil makes one whose requests wait at most `requestTimeout` for data.
        public var urlSession: URLSession?
        /// How long a request waits for data, in the session DiaryKit makes.
        public var requestTimeout: Duration
        /// Replaces the HTTP transport (swift-openapi-urlsession's, over `urlSession`), in an
        /// app's tests for instance.
        public var transport: (any ClientTransport)?
        /// Replaces the realtime socket (`URLSessionRealtimeTransport`, over `urlSession`).
        public var realtimeTransport: (any RealtimeTransport)?

        /// Creates a configuration.
        public init(serverURL: URL, appVersion: String? = nil, sessionStorage: any SessionStorage = InMemorySessionStorage(),
                    urlSession: URLSession? = nil, requestTimeout: Duration = .seconds(60),
                    transport: (any ClientTransport)? = nil, realtimeTransport: (any RealtimeTransport)? = nil) {
            self.serverURL = serverURL
            self.appVersion = appVersion
            self.sessionStorage = sessionStorage
            self.urlSession = urlSession
            self.requestTimeout = requestTimeout
            self.transport = transport
            self.realtimeTransport = realtimeTransport
        }
    }

    /// The configuration the client was made with.
    public let configuration: Configuration
    /// The generated client, with the token, `X-App-Version` and problems as `DiaryError`.
    /// Internal: the app sees DiaryKit's own types only.
    let api: Client
    let authority: SessionAuthority
    /// The transport the calls go through, for the photos' presigned URLs.
    let transport: any ClientTransport
    /// What opens the realtime socket.
    let realtimeTransport: any RealtimeTransport
    /// Cuts short the realtime streams' backoff (`reconnectRealtimeNow()`).
    let realtimeWakeup = RealtimeWakeup()

    /// Creates a client; it signs nobody in. A session saved earlier in `sessionStorage` is used.
    public init(configuration: Configuration) {
        self.configuration = configuration
        let session = configuration.urlSession ?? Self.makeSession(timeout: configuration.requestTimeout)
        let transport = configuration.transport ?? URLSessionTransport(configuration: .init(session: session))
        self.transport = transport
        realtimeTransport = configuration.realtimeTransport ?? URLSessionRealtimeTransport(session: session)
        let generated = OpenAPIRuntime.Configuration(dateTranscoder: MicrosecondDateTranscoder())
        var outer: [any ClientMiddleware] = [ProblemMiddleware()]
        if let version = configuration.appVersion { outer.append(AppVersionMiddleware(version: version)) }
        // Refreshing goes through a client without the token middleware, which is waiting on it.
        let anonymous = Client(serverURL: configuration.serverURL, configuration: generated, transport: transport,
                               middlewares: outer)
        let authority = SessionAuthority(storage: configuration.sessionStorage) { refreshToken in
            try await DiaryClient.perform {
                let output = try await anonymous.refreshSession(body: .json(.init(refreshToken: refreshToken)))
                return StoredSession(try output.ok.body.json)
            }
        }
        self.authority = authority
        api = Client(serverURL: configuration.serverURL, configuration: generated, transport: transport,
                     middlewares: outer + [AuthenticationMiddleware(authority: authority), RawPhotoHeadersMiddleware(),
                                                       RawExportHeaderMiddleware(), ClearQuestionMiddleware()])
    }

    /// Whether a session is held (it may still turn out to have ended on the server).
    public var isSignedIn: Bool {
        get async { (try? await authority.current()) != nil }
    }

    /// The signed-in user's id, when a session is held.
    public var userID: String? {
        get async { try? await authority.current()?.userID }
    }

    /// Calls `handler` whenever the server ends the session (a refresh token reused or
    /// revoked, signed out elsewhere, the account deleted), after DiaryKit forgot it: show sign-in.
    public func onSessionEnded(_ handler: @escaping @Sendable () -> Void) async {
        await authority.onSessionEnded(handler)
    }

    private static func makeSession(timeout: Duration) -> URLSession {
        let configuration = URLSessionConfiguration.default
        configuration.timeoutIntervalForRequest = TimeInterval(max(1, timeout.components.seconds))
        return URLSession(configuration: configuration)
    }

    /// Runs `body` with every call in it made as `userID` only: if another user is signed in,
    /// or signs in meanwhile, the calls throw `DiaryError.sessionChanged` instead of going out
    /// with the other user's token.
    func acting<Result: Sendable>(as userID: String, _ body: @Sendable () async throws -> Result) async throws -> Result {
        try await SessionAuthority.$actingUserID.withValue(userID) { try await body() }
    }

    /// Runs a generated call, unwrapping the runtime's `ClientError` so callers catch the
    /// `DiaryError` a middleware threw, or the transport's own error.
    static func perform<Result>(_ call: () async throws -> Result) async throws -> Result {
        do {
            return try await call()
        } catch let error as ClientError {
            throw error.underlyingError
        }
    }

    /// The same, for the instance's calls.
    func perform<Result>(_ call: () async throws -> Result) async throws -> Result {
        try await Self.perform(call)
    }
}

extension StoredSession {
    /// The session a sign-in or refresh answered, to keep.
    init(_ session: Components.Schemas.Session, now: Date = Date()) {
        self.init(accessToken: session.accessToken, refreshToken: session.refreshToken,
                  accessTokenExpiresAt: now.addingTimeInterval(TimeInterval(session.expiresIn)),
                  userID: session.user.id)
    }
}
