package import DiaryCore
package import PostgresClient

/// Sign-in and token settings.
package struct AuthConfiguration: Sendable {
    /// `DIARY_ENV=production`: no dev sign-in, no generated keys.
    package var production: Bool
    /// `DIARY_DEV_AUTH=1` outside production.
    package var devSignIn: Bool
    package var jwtKeyFile: String?
    /// Where development keeps its generated JWT key (`DIARY_DATA_DIR`, default .data).
    package var dataDirectory: String
    package var apple: AppleIdentityVerifier.Configuration

    package init(production: Bool, devSignIn: Bool, jwtKeyFile: String?, dataDirectory: String, apple: AppleIdentityVerifier.Configuration) {
        self.production = production
        self.devSignIn = devSignIn
        self.jwtKeyFile = jwtKeyFile
        self.dataDirectory = dataDirectory
        self.apple = apple
    }
}
