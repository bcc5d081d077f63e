package import AppleIDClient
import Foundation
package import Logging
import Metrics
import NIOConcurrencyHelpers

/// Turns the authorization code a sign-in brings into Apple's refresh token, sealed for the
/// database. The token is kept only to revoke it when the account is deleted.
///
/// A failed exchange never fails the sign-in: it is logged, and the next sign-in that
/// brings a code tries again.
package final class AppleTokenExchanger: Sendable {
    private let client: AppleIDClient?
    private let vault: AppleTokenVault
    private let saidUnconfigured = NIOLockedValueBox(false)

    package init(client: AppleIDClient?, vault: AppleTokenVault) {
        self.client = client
        self.vault = vault
    }

    /// Apple's token for `code`, sealed, with the client id it was issued to; nil when codes
    /// cannot be exchanged here, Apple did not give one, or it is another user's.
    package func sealedToken(forCode code: String, identity: AppleIdentityVerifier.Identity, logger: Logger) async -> SealedAppleToken? {
        guard let client, client.credentials != nil else {
            let first = saidUnconfigured.withLockedValue { said in defer { said = true }; return !said }
            if first {
                logger.notice("an authorization code arrived, but Sign in with Apple's key is not configured (APPLE_TEAM_ID, APPLE_KEY_ID, APPLE_PRIVATE_KEY_FILE): codes are ignored, and deleted accounts' Apple tokens cannot be revoked")
            }
            return nil
        }
        let outcome: String
        defer { Counter(label: "apple_token_exchanges_total", dimensions: [("result", outcome)]).increment() }
        // The code belongs to the app the identity token was issued to.
        switch await client.exchange(code: code, clientID: identity.audience) {
        case .refreshToken(_, let subject?) where subject != identity.subject:
            outcome = "refused"
            logger.warning("apple: the authorization code belongs to another Apple user; not kept")
            return nil
        case .refreshToken(let token, _):
            do {
                let sealed = try vault.seal(token)
                outcome = "stored"
                return SealedAppleToken(sealed: sealed, clientID: identity.audience)
            } catch {
                outcome = "failed"
                logger.error("apple: cannot seal the refresh token", metadata: ["error": "\(error)"])
                return nil
            }
        case .refused(let status, let error):
            outcome = "refused"
            logger.warning("apple: the authorization code was refused; the next sign-in with a code tries again", metadata: ["status": "\(status)", "error": "\(error)"])
            return nil
        case .failed(let why):
            outcome = "failed"
            logger.warning("apple: the authorization code could not be exchanged; the next sign-in with a code tries again", metadata: ["error": "\(why)"])
            return nil
        }
    }
}

/// An Apple refresh token as the database keeps it.
package struct SealedAppleToken: Sendable, Equatable {
    package var sealed: AppleTokenVault.Sealed
    package var clientID: String
}
