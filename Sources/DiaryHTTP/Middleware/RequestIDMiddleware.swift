import Hummingbird

/// Returns the request id (the `hb.request.id` in every log line of the request) as
/// `X-Request-Id`, so a client's report can be matched to the server's logs.
struct RequestIDMiddleware<Context: RequestContext>: RouterMiddleware {
    static var header: HTTPFields.Element.Name { HTTPFields.Element.Name("X-Request-Id")! }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        response.headers[Self.header] = context.id
        return response
    }
}
