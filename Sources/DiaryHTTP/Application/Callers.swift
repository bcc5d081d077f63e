import DiaryCore
import PostgresClient

/// Who calls, from their access token, and the scope they read and write through: the one
/// identity check that HTTP (`BearerAuthenticator`) and the realtime socket (`RealtimeGateway`)
/// share, built once from the configuration, so that both answer a token alike.
struct Callers: Sendable {
    let tokens: TokenService
    let pool: PostgresPool
    /// Where a scope sends transactions that only read (`ServerConfiguration.sharedReads`).
    let readPlacement: PostgresPool.Placement
    /// One PostgreSQL or a Citus coordinator (`ServerConfiguration.citus`).
    let database: RequestScope.Database
    let photoLinks: PhotoLinks
    let inviteLinks: InviteLinks

    init(configuration: ServerConfiguration, tokens: TokenService, pool: PostgresPool, photoLinks: PhotoLinks) {
        self.tokens = tokens
        self.pool = pool
        self.readPlacement = configuration.sharedReads ? .sharedConnection : .ownConnection
        self.database = configuration.citus ? .citus : .single
        self.photoLinks = photoLinks
        self.inviteLinks = configuration.inviteLinks
    }

    /// The identity a token carries, or the problem HTTP and the realtime socket alike answer:
    /// `token_expired` for a genuine token past its expiry, `unauthorized` for anything else.
    func identity(fromToken token: String) async throws(Problem) -> TokenService.Identity {
        do {
            return try await tokens.verifyAccessToken(token)
        } catch TokenService.Failure.expired {
            throw Problem.tokenExpired()
        } catch {
            throw Problem.unauthorized("the access token is not valid", invalidToken: true)
        }
    }

    /// The caller's way to the database. Whether their session is live, the database checks
    /// inside each transaction (`RequestScope`).
    func scope(for identity: TokenService.Identity) -> RequestScope {
        RequestScope(identity: identity, pool: pool, photoLinks: photoLinks, inviteLinks: inviteLinks, readPlacement: readPlacement, database: database)
    }

    /// The token of an `Authorization: Bearer …` header (the scheme in any case), or nil.
    static func token(fromAuthorization header: String) -> String? {
        guard header.count > 7, header.prefix(7).lowercased() == "bearer " else { return nil }
        return String(header.dropFirst(7))
    }
}
