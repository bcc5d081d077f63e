package import AppleIDClient
package import DiaryCore
import Foundation
package import Logging
import ServiceLifecycle

/// Sign in with Apple beyond the identity token: the verifier (sign-in and notifications
/// share its key cache), the code exchange, and the revocation queue's worker.
package struct AppleAccounts: Sendable {
    package var verifier: AppleIdentityVerifier
    package var exchanger: AppleTokenExchanger
    package var revoker: AppleTokenRevoker
}

/// Runs the revocation queue's worker beside the HTTP server.
struct AppleRevocationService: Service {
    let revoker: AppleTokenRevoker

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await revoker.run()
        }
    }
}
