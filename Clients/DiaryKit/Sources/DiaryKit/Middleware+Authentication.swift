import DiaryAPI
import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Adds the bearer token to every call that needs one and, when the server says the token
/// expired (401 `token_expired`), refreshes it once (shared with every other call that found
/// it expired) and sends the call again. Any other 401 means the server ended the session:
/// DiaryKit forgets it and throws `DiaryError.sessionEnded`.
struct AuthenticationMiddleware: ClientMiddleware {
    /// The operations the contract declares with `security: []`.
    static let anonymousOperations: Set<String> = [
        "signInWithApple", "signInForDevelopment", "refreshSession", "getServiceStatus", "getPhoto",
    ]

    let authority: SessionAuthority

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard !Self.anonymousOperations.contains(operationID) else { return try await next(request, body, baseURL) }
        let token = try await authority.accessToken()
        let (response, responseBody) = try await next(Self.authorized(request, token), body, baseURL)
        guard response.status == .unauthorized else { return (response, responseBody) }
        let problem = try await ProblemMiddleware.problem(response, body: responseBody)
        guard problem.code == .tokenExpired else {
            try await authority.end(refused: token)
            throw DiaryError.sessionEnded
        }
        // A body that can be read once was already sent: the caller retries, with the new token.
        guard body == nil || body?.iterationBehavior == .multiple else { throw DiaryError.problem(problem) }
        let renewed = try await authority.refreshedToken(replacing: token)
        return try await next(Self.authorized(request, renewed), body, baseURL)
    }

    static func authorized(_ request: HTTPRequest, _ token: String) -> HTTPRequest {
        var request = request
        request.headerFields[.authorization] = "Bearer \(token)"
        return request
    }
}
