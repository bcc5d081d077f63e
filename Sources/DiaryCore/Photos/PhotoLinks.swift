package import Crypto
package import DiaryModels
package import Foundation
import PostgresClient

/// Signed, expiring photo URLs: `/v1/photos/{id}?exp=<unix seconds>&sig=<base64url HMAC>`.
///
/// The HMAC-SHA256 covers the photo id and the expiry, keyed with the server's URL key
/// (`DIARY_URL_KEY_FILE`). A URL needs no bearer token, so image loaders and caches can
/// fetch it; it is minted only into responses that the caller's row-level security let
/// through, which is what keeps a photo to its diary's members.
package struct PhotoLinks: Sendable {
    package static let lifetime: TimeInterval = 3600
    /// Longer than any `exp` or `sig` we mint; anything longer is not ours.
    static let maximumParameterLength = 64

    let key: SymmetricKey
    let now: @Sendable () -> Date

    package init(key: SymmetricKey, now: @escaping @Sendable () -> Date = Date.init) {
        self.key = key
        self.now = now
    }

    package func path(for id: UUID, expiresAt: Int) -> String {
        "/v1/photos/\(id.canonicalText)?exp=\(expiresAt)&sig=\(signature(id: id, expiresAt: expiresAt))"
    }

    /// The photo as the caller sees it, with a URL valid for `lifetime` from now.
    package func photo(id: UUID, contentType: String, bytes: Int, width: Int, height: Int) -> Photo {
        let expiresAt = Int(now().timeIntervalSince1970) + Int(Self.lifetime)
        return Photo(
            id: id, contentType: contentType, bytes: bytes, width: width, height: height,
            url: path(for: id, expiresAt: expiresAt), urlExpiresAt: Date(timeIntervalSince1970: TimeInterval(expiresAt))
        )
    }

    package enum Verdict: Equatable, Sendable {
        /// Valid for this many more seconds.
        case valid(secondsLeft: Int)
        case expired
        /// Tampered with, or not ours at all. Told apart from nothing else.
        case forbidden
    }

    /// The signature is checked first, so a forged URL is `forbidden` whatever its `exp`.
    package func verify(id: UUID, exp: String?, sig: String?) -> Verdict {
        guard let exp, let sig, exp.utf8.count <= Self.maximumParameterLength, sig.utf8.count <= Self.maximumParameterLength,
              let expiresAt = Int(exp), expiresAt > 0, String(expiresAt) == exp,
              let mac = Base64URL.decode(sig), Base64URL.encode(mac) == sig,
              HMAC<SHA256>.isValidAuthenticationCode(mac, authenticating: Self.message(id: id, expiresAt: expiresAt), using: key)
        else { return .forbidden }
        let left = expiresAt - Int(now().timeIntervalSince1970)
        return left > 0 ? .valid(secondsLeft: left) : .expired
    }

    func signature(id: UUID, expiresAt: Int) -> String {
        Base64URL.encode(Data(HMAC<SHA256>.authenticationCode(for: Self.message(id: id, expiresAt: expiresAt), using: key)))
    }

    /// Bound to its purpose, so the MAC can never be mistaken for another of this key's.
    static func message(id: UUID, expiresAt: Int) -> Data {
        Data("diary-photo\n\(id.canonicalText)\n\(expiresAt)".utf8)
    }
}
