package import Foundation

/// The link that carries an invite code, `<PUBLIC_URL>/i/<code>`: minted into every response
/// that carries the code, so an app can share it (LINE, Messages), and read back when a join
/// is given the link instead of the code. Rotating the code changes the link with it.
package struct InviteLinks: Sendable, Hashable {
    /// The server's public address as clients and browsers reach it (`PUBLIC_URL`), with no
    /// trailing slash.
    package let publicURL: String

    package init(publicURL: URL) {
        var text = publicURL.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        self.publicURL = text
    }

    /// The link for `code`.
    package func url(for code: String) -> String { "\(publicURL)/i/\(code)" }

    /// What a join was given.
    package enum Reading: Sendable, Equatable {
        /// A code, as typed: no link at all.
        case code(String)
        /// This server's invite link: the code it carries.
        case link(code: String)
        /// A link, but not exactly `<PUBLIC_URL>/i/<code>`: another host, another path, a
        /// query or a fragment.
        case foreignLink
    }

    /// Reads `text` as a code, or as a link whose host, port and path must be this server's.
    package func read(_ text: String) -> Reading {
        guard text.contains("://") else { return .code(text) }
        let prefix = "\(publicURL)/i/"
        guard text.count > prefix.count, text.lowercased().hasPrefix(prefix.lowercased()) else { return .foreignLink }
        let code = String(text.dropFirst(prefix.count))
        guard !code.contains(where: { "/?#%".contains($0) }) else { return .foreignLink }
        return .link(code: code)
    }
}
