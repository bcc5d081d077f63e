package import AppleIDClient
package import DiaryCore
package import Foundation

/// Sign in with Apple's REST API: where it is, the key that signs our client secret, and
/// the key that seals the refresh tokens we keep to revoke.
package struct AppleConfiguration: Sendable {
    /// `APPLE_AUTH_URL`: Apple, or a stand-in.
    package var authURL: URL = AppleIDClient.defaultBaseURL
    /// nil: authorization codes are ignored and no token can be revoked.
    package var credentials: AppleIDCredentials?
    /// `APPLE_CA_FILE`: an extra trusted CA in PEM, for a stand-in.
    package var caFile: String?
    /// `DIARY_SECRETS_KEY_FILE`; development generates one in the data folder.
    package var secretsKeyFile: String?
    package var revocations = AppleTokenRevoker.Options()

    package init(authURL: URL = AppleIDClient.defaultBaseURL, credentials: AppleIDCredentials? = nil, caFile: String? = nil, secretsKeyFile: String? = nil) {
        self.authURL = authURL
        self.credentials = credentials
        self.caFile = caFile
        self.secretsKeyFile = secretsKeyFile
    }
}
