import DiaryCore
import Foundation
import Hummingbird

/// The context of every request. `scope` is set by `BearerAuthenticator` once the
/// access token checks out; authenticated routes then run in `AuthenticatedContext`.
struct AppRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    var scope: RequestScope?
    /// The connection's peer: a proxy's address when the server sits behind one.
    let peerAddress: String?
    /// The client's address, as `ClientAddressMiddleware` reads it (`TrustedProxies`).
    var clientAddress: String?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress?.ipAddress
        clientAddress = peerAddress
    }

    var maxUploadSize: Int { APIRequestDecoder.maximumBytes }

    var requestDecoder: APIRequestDecoder { APIRequestDecoder() }
    var responseEncoder: APIResponseEncoder { APIResponseEncoder() }
}

/// The context of authenticated routes: the caller is known, and the only way to the
/// database is the caller's `RequestScope`.
struct AuthenticatedContext: ChildRequestContext {
    var coreContext: CoreRequestContextStorage
    let scope: RequestScope
    /// As `ClientAddressMiddleware` found it, for limits per address.
    let clientAddress: String?

    init(context: AppRequestContext) throws {
        guard let scope = context.scope else { throw Problem.unauthorized("an access token is required") }
        self.coreContext = context.coreContext
        self.scope = scope
        self.clientAddress = context.clientAddress
    }

    var maxUploadSize: Int { APIRequestDecoder.maximumBytes }
    var requestDecoder: APIRequestDecoder { APIRequestDecoder() }
    var responseEncoder: APIResponseEncoder { APIResponseEncoder() }

    var userID: UUID { scope.identity.userID }
}
