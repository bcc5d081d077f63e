import DiaryCore
import DiaryModels
import Hummingbird
import Logging

/// Sign-in, refresh and logout. Only logout needs a bearer token.
struct AuthRoutes {
    let accounts: AccountRepository
    let apple: AppleIdentityVerifier
    let appleTokens: AppleTokenExchanger
    let devSignInEnabled: Bool

    func register(public router: RouterGroup<AppRequestContext>) {
        router.post("auth/apple") { request, context -> Session in
            let body = try await request.decode(as: AppleSignInRequest.self, context: context)
            let token = try Validation.text(body.identityToken, field: "identityToken", limit: .identityToken)
            let nonce = try Validation.optionalText(body.nonce, field: "nonce", limit: .nonce)
            let displayName = try body.displayName.map { try Validation.displayName($0) } ?? "ユーザー"
            let code = try Validation.optionalText(body.authorizationCode, field: "authorizationCode", limit: .authorizationCode)
            let identity: AppleIdentityVerifier.Identity
            do {
                identity = try await apple.verify(token, rawNonce: nonce)
            } catch let failure as AppleIdentityVerifier.Failure {
                context.logger.info("apple sign-in refused", metadata: ["reason": "\(failure)"])
                throw Problem.unauthorized("the identity token is not valid")
            }
            var appleToken: SealedAppleToken?
            if let code { appleToken = await appleTokens.sealedToken(forCode: code, identity: identity, logger: context.logger) }
            return try await accounts.signInWithApple(subject: identity.subject, email: identity.email, displayName: displayName, appleToken: appleToken)
        }

        router.post("auth/dev") { request, context -> Session in
            guard devSignInEnabled else { throw Problem.notFound("no such route") }
            let body = try await request.decode(as: DevSignInRequest.self, context: context)
            return try await accounts.signInForDevelopment(name: try Validation.displayName(body.name, field: "name"))
        }

        router.post("auth/refresh") { request, context -> Session in
            let body = try await request.decode(as: RefreshRequest.self, context: context)
            // A value that cannot be a refresh token is as invalid as a spent one: 401, which
            // clients read as "sign in again". Only a missing or non-string field is a 400.
            let presented = body.refreshToken
            guard (1...128).contains(presented.utf8.count), let session = try await accounts.refresh(presented) else {
                throw Problem.unauthorized("the refresh token is not valid")
            }
            return session
        }
    }

    func register(authenticated router: RouterGroup<AuthenticatedContext>) {
        router.post("auth/logout") { _, context -> HTTPResponse.Status in
            try await UserRepository(scope: context.scope).logout()
            return .noContent
        }
    }
}
