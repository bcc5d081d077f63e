package import DiaryCore

/// Sign in with Apple beyond the identity token: the verifier (sign-in and notifications
/// share its key cache), the code exchange, and the revocation queue's worker.
package struct AppleAccounts: Sendable {
    package var verifier: AppleIdentityVerifier
    package var exchanger: AppleTokenExchanger
    package var revoker: AppleTokenRevoker
}
