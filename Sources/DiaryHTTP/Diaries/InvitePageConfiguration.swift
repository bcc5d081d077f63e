package import Foundation

/// What the invite page (`GET /i/<code>`) and the app-site association need to know of the app.
package struct InvitePageConfiguration: Sendable {
    /// `APP_STORE_URL`: the app's page in the App Store, the page's second button.
    package var appStoreURL: URL = InvitePageConfiguration.defaultAppStoreURL
    /// `APPLE_APP_ID`: the app's team and bundle id (`TEAMID.bundle.id`), which
    /// `/.well-known/apple-app-site-association` claims `/i/*` for; unset, it answers 404.
    package var appleAppID: String?
    /// `APP_URL_SCHEME`: the app's URL scheme, which the page's first button opens
    /// (`<scheme>://join?code=<code>`).
    package var appURLScheme = InvitePageConfiguration.defaultAppURLScheme
    /// Invite pages one client address may open a minute: so the page is no faster way to
    /// guess codes than a join (10 wrong codes a minute per user).
    package var pagesPerMinute = 30

    package init() {}

    package static let defaultAppStoreURL = URL(string: "https://apps.apple.com/jp/search?term=%E3%81%9A%E3%81%A3%E3%81%A8%E6%97%A5%E8%A8%98")!
    package static let defaultAppURLScheme = "zuttonikki"

    /// A team id (ten capitals and digits), a dot, and a bundle id.
    package static func isAppleAppID(_ text: String) -> Bool {
        text.wholeMatch(of: /[A-Z0-9]{10}\.[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+/) != nil
    }

    /// A URL scheme as RFC 3986 spells one, in lower case, as iOS registers them.
    package static func isURLScheme(_ text: String) -> Bool {
        text.count <= 64 && text.wholeMatch(of: /[a-z][a-z0-9+.-]*/) != nil
    }
}
