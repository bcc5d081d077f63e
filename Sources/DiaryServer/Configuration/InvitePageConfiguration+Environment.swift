import DiaryCore
import DiaryHTTP
import Foundation

extension InvitePageConfiguration {
    /// APP_STORE_URL (https; default the App Store's search for the app), APPLE_APP_ID
    /// (TEAMID.bundle.id; unset, no app-site association), APP_URL_SCHEME (default zuttonikki).
    static func fromEnvironment(production: Bool, _ environment: [String: String] = Setting.environment) throws -> InvitePageConfiguration {
        var configuration = InvitePageConfiguration()
        configuration.appStoreURL = try Setting.url(environment: "APP_STORE_URL", default: defaultAppStoreURL, production: production, in: environment)
        if let appID = Setting.string(flag: nil, environment: "APPLE_APP_ID", in: environment) {
            guard isAppleAppID(appID) else {
                throw ConfigurationError(description: "APPLE_APP_ID must be the team id, a dot and the bundle id (ABCDE12345.app.zutto-nikki), not \"\(appID)\"")
            }
            configuration.appleAppID = appID
        }
        let scheme = Setting.string(flag: nil, environment: "APP_URL_SCHEME", default: defaultAppURLScheme, in: environment)!
        guard isURLScheme(scheme) else {
            throw ConfigurationError(description: "APP_URL_SCHEME must be a URL scheme in lower case (letters, digits, +, . or -, a letter first), not \"\(scheme)\"")
        }
        configuration.appURLScheme = scheme
        return configuration
    }
}
