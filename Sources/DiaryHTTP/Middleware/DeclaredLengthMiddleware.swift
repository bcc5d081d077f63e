import Hummingbird

/// Refuses at the header a request that declares a body larger than any route takes (the
/// photo upload's 10 MiB): 413 before authentication and before a byte of the body is read,
/// whatever the route does with bodies. Routes keep their own, smaller limits
/// (`Request.collectBody(upTo:)`).
struct DeclaredLengthMiddleware<Context: RequestContext>: RouterMiddleware {
    static var limit: Int { PhotoRoutes.maximumBytes }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > Self.limit {
            throw Problem.payloadTooLarge(limit: Self.limit)
        }
        return try await next(request, context)
    }
}
