package import Crypto
package import DiaryModels
package import Foundation
import PostgresClient

/// Signed, expiring photo URLs: `/v1/photos/{id}?exp=<unix seconds>&sig=<base64url HMAC>`,
/// or, with `PHOTO_URLS=presigned`, the bucket's own presigned GET URLs.
///
/// The HMAC-SHA256 covers the photo id and the expiry, keyed with the server's URL key
/// (`DIARY_URL_KEY_FILE`). A URL needs no bearer token, so image loaders and caches can
/// fetch it; it is minted only into responses that the caller's row-level security let
/// through, which is what keeps a photo to its diary's members, in either mode.
package struct PhotoLinks: Sendable {
    package static let lifetime: Duration = .seconds(3600)
    /// Longer than any `exp` or `sig` we mint; anything longer is not ours.
    static let maximumParameterLength = 64

    /// Who serves a photo's bytes.
    package enum Mode: Sendable {
        /// This server, at `/v1/photos/{id}` (`PHOTO_URLS=server`, the default): a deleted
        /// photo or a removed member is refused at once.
        case server
        /// The bucket, by presigned GET (`PHOTO_URLS=presigned`): no byte passes through the
        /// server, and a URL works until it expires, whatever happens to the photo meanwhile.
        case presigned(S3PhotoStore)
        /// Inside an export: the photo's path in the ZIP (`ExportArchive.photoPath`), where
        /// the archive carries its bytes, readable without the server.
        case archive
    }

    let key: SymmetricKey
    let now: @Sendable () -> Date
    package let mode: Mode

    package init(key: SymmetricKey, mode: Mode = .server, now: @escaping @Sendable () -> Date = Date.init) {
        self.key = key
        self.mode = mode
        self.now = now
    }

    /// The same key and clock, with photos served as `mode` says.
    package func serving(_ mode: Mode) -> PhotoLinks {
        PhotoLinks(key: key, mode: mode, now: now)
    }

    package func path(for id: UUID, expiresAt: Int) -> String {
        "/v1/photos/\(id.canonicalText)?exp=\(expiresAt)&sig=\(signature(id: id, expiresAt: expiresAt))"
    }

    /// The photo as the caller sees it, with a URL valid for `lifetime` from now. `hash` names
    /// its bytes in the store, for a presigned URL.
    package func photo(id: UUID, hash: String, contentType: String, bytes: Int, width: Int, height: Int) -> Photo {
        let issuedAt = Int(now().timeIntervalSince1970)
        let expiresAt = issuedAt + Int(Self.lifetime.wholeSeconds)
        return Photo(
            id: id, contentType: contentType, bytes: bytes, width: width, height: height,
            url: url(id: id, hash: hash, contentType: contentType, from: issuedAt, until: expiresAt), urlExpiresAt: Date(timeIntervalSince1970: TimeInterval(expiresAt))
        )
    }

    /// A profile photo's URL, from the token that `member_profiles.profile_photo` and
    /// `UserColumns.me` spell (`<id> <hash> <type>`), or nil for none. It expires at the end
    /// of the window after the current one, so a photo keeps one URL for a whole window
    /// (`lifetime`), valid for between one and two, and an app's image cache keeps it.
    package func profileImageURL(_ token: String?) -> String? {
        guard let token else { return nil }
        let parts = token.split(separator: " ")
        guard parts.count == 3, let id = UUID(uuidString: String(parts[0])) else { return nil }
        let window = Int(Self.lifetime.wholeSeconds)
        let windowStart = Int(now().timeIntervalSince1970) / window * window
        let expiresAt = windowStart + 2 * window
        return url(id: id, hash: String(parts[1]), contentType: String(parts[2]), from: windowStart, until: expiresAt)
    }

    /// A photo's URL as `mode` serves it, valid from `start` until `end` (Unix seconds).
    private func url(id: UUID, hash: String, contentType: String, from start: Int, until end: Int) -> String {
        switch mode {
        case .server:
            path(for: id, expiresAt: end)
        case .presigned(let store):
            store.presignedURL(of: hash, contentType: contentType, lifetime: end - start, date: Date(timeIntervalSince1970: TimeInterval(start)))
        case .archive:
            ExportArchive.photoPath(id: id, contentType: contentType)
        }
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
