import Hummingbird

/// Sets the request's client address (`AppRequestContext.clientAddress`): its connection's
/// peer, or, from a trusted proxy, the address `X-Forwarded-For` names (`TrustedProxies`).
/// The request log and the invite page's limit read it.
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = AppRequestContext
    let trustedProxies: TrustedProxies

    static var forwardedFor: HTTPFields.Element.Name { HTTPFields.Element.Name("X-Forwarded-For")! }

    func handle(_ request: Request, context: AppRequestContext, next: (Request, AppRequestContext) async throws -> Response) async throws -> Response {
        var context = context
        context.clientAddress = trustedProxies.clientAddress(peer: context.peerAddress, forwardedFor: request.headers[values: Self.forwardedFor])
        return try await next(request, context)
    }
}
