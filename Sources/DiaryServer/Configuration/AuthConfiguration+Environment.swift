import DiaryCore
import DiaryHTTP
import Foundation

extension AuthConfiguration {
    static func fromEnvironment(_ environment: [String: String] = Setting.environment) throws -> AuthConfiguration {
        func value(_ name: String) -> String? { Setting.string(flag: nil, environment: name, in: environment) }
        let production = value("DIARY_ENV") == "production"
        let devSignIn = value("DIARY_DEV_AUTH") == "1"
        if production && devSignIn {
            throw ConfigurationError(description: "DIARY_DEV_AUTH=1 is refused when DIARY_ENV=production")
        }
        let authURL = try AppleConfiguration.authURL(production: production, environment)
        // Read raw: an empty APPLE_JWKS_URL is refused as no URL, not taken for the default.
        let jwks = environment["APPLE_JWKS_URL"] ?? authURL.appendingPathComponent("auth/keys").absoluteString
        guard let jwksURL = URL(string: jwks), jwksURL.scheme == "https" || !production else {
            throw ConfigurationError(description: "APPLE_JWKS_URL must be an https URL")
        }
        let audiences = Set(audienceList(value("APPLE_AUDIENCE")))
        if production && audiences.isEmpty {
            throw ConfigurationError(description: "APPLE_AUDIENCE must list the app's bundle ids in production")
        }
        return AuthConfiguration(
            production: production,
            devSignIn: devSignIn && !production,
            jwtKeyFile: value("DIARY_JWT_KEY_FILE"),
            dataDirectory: environment["DIARY_DATA_DIR"] ?? ".data",
            apple: .init(audiences: audiences, jwksURL: jwksURL, jwksFile: value("APPLE_JWKS_FILE"))
        )
    }

    /// APPLE_AUDIENCE's bundle ids, in the order given.
    static func audienceList(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}
