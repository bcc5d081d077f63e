import DiaryAPI
import Foundation

extension DiaryClient {
    /// Signs in with Sign in with Apple's credential, keeps the session, and returns the user.
    ///
    /// - Parameters:
    ///   - identityToken: `ASAuthorizationAppleIDCredential.identityToken`, as UTF-8 text.
    ///   - nonce: the raw nonce whose SHA-256 (hex) the app set on the Apple request; the
    ///     token's `nonce` claim must match it. Pass nil only if the request had none.
    ///   - authorizationCode: the credential's `authorizationCode`, which lets the server
    ///     revoke Apple's grant when the account is deleted.
    ///   - displayName: the name Apple gave on the first sign-in only.
    @discardableResult
    public func signInWithApple(identityToken: String, nonce: String?, authorizationCode: String? = nil,
                                displayName: String? = nil) async throws -> Me {
        let session = try await perform {
            try await api.signInWithApple(body: .json(.init(
                identityToken: identityToken, nonce: nonce, displayName: displayName, authorizationCode: authorizationCode)))
                .ok.body.json
        }
        try await authority.replace(with: StoredSession(session))
        return Me(session.user)
    }

    /// Signs in by name on a server with `DIARY_DEV_AUTH=1` (development and tests only; 404
    /// elsewhere), keeps the session, and returns the user.
    @discardableResult
    public func signInForDevelopment(name: String) async throws -> Me {
        let session = try await perform {
            try await api.signInForDevelopment(body: .json(.init(name: name))).ok.body.json
        }
        try await authority.replace(with: StoredSession(session))
        return Me(session.user)
    }

    /// Ends the session on the server and forgets it here. Forgetting never waits on the
    /// network: offline, or with a session the server had already ended, the user is signed
    /// out here all the same (the refresh token is gone, the access token lapses within the hour).
    public func signOut() async throws {
        _ = try? await perform { try await api.logOut().noContent }
        try await authority.replace(with: nil)
    }
}
