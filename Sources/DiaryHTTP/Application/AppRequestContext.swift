import DiaryCore
import Foundation
import Hummingbird

/// The context of every request. `scope` is set by `BearerAuthenticator` once the
/// access token checks out; authenticated routes then run in `AuthenticatedContext`.
struct AppRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    var scope: RequestScope?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
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

    init(context: AppRequestContext) throws {
        guard let scope = context.scope else { throw Problem.unauthorized("an access token is required") }
        self.coreContext = context.coreContext
        self.scope = scope
    }

    var maxUploadSize: Int { APIRequestDecoder.maximumBytes }
    var requestDecoder: APIRequestDecoder { APIRequestDecoder() }
    var responseEncoder: APIResponseEncoder { APIResponseEncoder() }

    var userID: UUID { scope.identity.userID }
}
