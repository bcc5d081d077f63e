import AppleIDClient
import DiaryCore
import DiaryHTTP
import Foundation

extension AppleConfiguration {
    /// The settings that turn the code exchange and revocation on: all of them, or none.
    static let keyVariables = ["APPLE_TEAM_ID", "APPLE_KEY_ID", "APPLE_PRIVATE_KEY_FILE"]

    /// From APPLE_*: Apple's REST API needs the team, the key id and the key file, and a
    /// client id (APPLE_CLIENT_ID, else the first APPLE_AUDIENCE). Without the key settings
    /// codes are ignored; in production a partial set refuses to start, naming what is missing.
    /// APPLE_AUTH_URL: Apple's REST API, where the keys are too unless APPLE_JWKS_URL says otherwise.
    static func authURL(production: Bool, _ environment: [String: String]) throws -> URL {
        try Setting.url(environment: "APPLE_AUTH_URL", default: AppleIDClient.defaultBaseURL, production: production, in: environment)
    }

    static func fromEnvironment(production: Bool, _ environment: [String: String] = Setting.environment) throws -> AppleConfiguration {
        func value(_ name: String) -> String? { Setting.string(flag: nil, environment: name, in: environment) }
        var apple = AppleConfiguration(
            authURL: try authURL(production: production, environment),
            caFile: value("APPLE_CA_FILE"),
            secretsKeyFile: value("DIARY_SECRETS_KEY_FILE")
        )
        if let caFile = apple.caFile, !FileManager.default.isReadableFile(atPath: caFile) {
            throw ConfigurationError(description: "APPLE_CA_FILE: cannot read \(caFile)")
        }
        let clientID = value("APPLE_CLIENT_ID") ?? AuthConfiguration.audienceList(value("APPLE_AUDIENCE")).first
        var missing = keyVariables.filter { value($0) == nil }
        let partial = missing.count < keyVariables.count || value("APPLE_CLIENT_ID") != nil
        if clientID == nil { missing.append("APPLE_CLIENT_ID (or APPLE_AUDIENCE)") }
        guard missing.isEmpty, let clientID else {
            if production && partial {
                throw ConfigurationError(description: "Sign in with Apple's key is half-configured: \(missing.joined(separator: ", ")) not set (set all of \(keyVariables.joined(separator: ", ")) and a client id, or none)")
            }
            return apple
        }
        let keyFile = value("APPLE_PRIVATE_KEY_FILE")!
        let credentials = AppleIDCredentials(
            teamID: value("APPLE_TEAM_ID")!, clientID: clientID, keyID: value("APPLE_KEY_ID")!,
            privateKeyPEM: try Setting.fileText(keyFile, variable: "APPLE_PRIVATE_KEY_FILE"))
        do {
            try credentials.validateKey()
        } catch {
            throw ConfigurationError(description: "APPLE_PRIVATE_KEY_FILE: \(keyFile) is not a P-256 private key in PEM (a .p8 file): \(error)")
        }
        apple.credentials = credentials
        return apple
    }
}
