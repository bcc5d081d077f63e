import DiaryCore
import Hummingbird
import Logging

/// Reads `Authorization: Bearer …` and, if the token's signature and expiry check out,
/// gives the request its `RequestScope` (`Callers`). Whether the session is still live is
/// checked by the database inside the request's own transaction (see `RequestScope`).
struct BearerAuthenticator: RouterMiddleware {
    typealias Context = AppRequestContext
    let callers: Callers

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let header = request.headers[.authorization] else {
            throw Problem.unauthorized("an access token is required")
        }
        guard let token = Callers.token(fromAuthorization: header) else {
            throw Problem.unauthorized("the access token is not valid")
        }
        let identity = try await callers.identity(fromToken: token)
        var context = context
        context.scope = callers.scope(for: identity)
        context.logger[metadataKey: "user"] = "\(identity.userID)"
        return try await next(request, context)
    }
}
