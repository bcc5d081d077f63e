import DiaryCore
import Hummingbird
import Logging
import PostgresClient

/// Reads `Authorization: Bearer …` and, if the token's signature and expiry check out,
/// gives the request its `RequestScope`. Whether the session is still live is checked by
/// the database inside the request's own transaction (see `RequestScope`).
struct BearerAuthenticator: RouterMiddleware {
    typealias Context = AppRequestContext
    let tokens: TokenService
    let pool: PostgresPool
    /// Where the scope sends transactions that only read (`ServerConfiguration.sharedReads`).
    let readPlacement: PostgresPool.Placement
    /// One PostgreSQL or a Citus coordinator (`ServerConfiguration.citus`).
    let database: RequestScope.Database
    let photoLinks: PhotoLinks
    let inviteLinks: InviteLinks

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization] else {
            throw Problem.unauthorized("an access token is required")
        }
        guard let token = Self.token(fromAuthorization: header) else {
            throw Problem.unauthorized("the access token is not valid")
        }
        let identity = try await Self.identity(fromToken: token, tokens: tokens)
        var context = context
        context.scope = RequestScope(
            identity: identity, pool: pool, photoLinks: photoLinks, inviteLinks: inviteLinks, readPlacement: readPlacement, database: database)
        context.logger[metadataKey: "user"] = "\(identity.userID)"
        return try await next(request, context)
    }

    /// The identity a token carries, or the problem HTTP and the realtime socket alike answer:
    /// `token_expired` for a genuine token past its expiry, `unauthorized` for anything else.
    static func identity(fromToken token: String, tokens: TokenService) async throws(Problem) -> TokenService.Identity {
        do {
            return try await tokens.verifyAccessToken(token)
        } catch TokenService.Failure.expired {
            throw Problem.tokenExpired()
        } catch {
            throw Problem.unauthorized("the access token is not valid", invalidToken: true)
        }
    }

    /// The token of an `Authorization: Bearer …` header (the scheme in any case), or nil.
    static func token(fromAuthorization header: String) -> String? {
        guard header.count > 7, header.prefix(7).lowercased() == "bearer " else { return nil }
        return String(header.dropFirst(7))
    }
}
