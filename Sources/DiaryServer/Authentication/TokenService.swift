import Crypto
import Foundation
import PostgresClient

/// Issues and checks our own tokens.
///
/// Access tokens are HS256 JWTs (`sub` user, `sid` session, 1 h). Refresh tokens are 256
/// random bits; the token that replaces one is HMAC(key, old token), so a client that
/// retries a refresh whose answer it lost is handed the very same pair again.
struct TokenService: Sendable {
    /// Kept as bytes because `SymmetricKey` is not `Sendable`.
    private let keyBytes: Data
    var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    init(key: SymmetricKey) {
        keyBytes = key.withUnsafeBytes { Data($0) }
    }
    static let accessLifetime: TimeInterval = 3600
    static let refreshLifetimeDays = 60

    struct AccessClaims: Codable, Equatable {
        var sub: String
        var sid: String
        var iat: Int
        var exp: Int
    }

    struct Identity: Sendable, Equatable {
        var userID: UUID
        var sessionID: UUID
    }

    enum Failure: Error {
        case invalid
    }

    func accessToken(for identity: Identity, issuedAt: Date) throws -> String {
        let issued = Int(issuedAt.timeIntervalSince1970)
        let claims = AccessClaims(sub: identity.userID.uuidString.lowercased(), sid: identity.sessionID.uuidString.lowercased(), iat: issued, exp: issued + Int(Self.accessLifetime))
        return try JSONWebToken.signHS256(claims, key: key)
    }

    /// Checks signature, algorithm and expiry. Whether the session is still live is for the
    /// database to say, in the same round trip as the request's query.
    func verifyAccessToken(_ token: String, now: Date = Date()) throws -> Identity {
        guard let jwt = try? JSONWebToken(compact: token), (try? jwt.verifyHS256(key: key)) != nil,
              let claims = try? jwt.claims(as: AccessClaims.self),
              Double(claims.exp) > now.timeIntervalSince1970,
              let user = UUID(canonicalText: claims.sub), let session = UUID(canonicalText: claims.sid) else {
            throw Failure.invalid
        }
        return Identity(userID: user, sessionID: session)
    }

    func newRefreshToken() -> String {
        Base64URL.encode(Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }))
    }

    func successor(of refreshToken: String) -> String {
        Base64URL.encode(Data(HMAC<SHA256>.authenticationCode(for: Data(refreshToken.utf8), using: key)))
    }

    static func hash(_ refreshToken: String) -> Data {
        Data(SHA256.hash(data: Data(refreshToken.utf8)))
    }

    /// Loads the signing key from `path`, or in development creates one there on first use.
    static func loadKey(path: String?, dataDirectory: String, production: Bool) throws -> SymmetricKey {
        let file = path ?? (dataDirectory as NSString).appendingPathComponent("jwt.key")
        if let data = FileManager.default.contents(atPath: file) {
            guard data.count >= 32 else { throw ConfigurationError(description: "the JWT key in \(file) is shorter than 32 bytes") }
            return SymmetricKey(data: data)
        }
        guard path == nil, !production else {
            throw ConfigurationError(description: production && path == nil
                ? "DIARY_JWT_KEY_FILE must name a key file of at least 32 random bytes in production"
                : "the JWT key file \(file) does not exist")
        }
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        let key = SymmetricKey(size: .bits256)
        let bytes = key.withUnsafeBytes { Data($0) }
        guard FileManager.default.createFile(atPath: file, contents: bytes, attributes: [.posixPermissions: 0o600]) else {
            throw ConfigurationError(description: "cannot write a development JWT key to \(file)")
        }
        return key
    }
}
