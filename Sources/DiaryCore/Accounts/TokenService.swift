package import Crypto
package import Foundation
import PostgresClient

/// Issues and checks our own tokens.
///
/// Access tokens are HS256 JWTs (`sub` user, `sid` session, 1 h). Refresh tokens are 256
/// random bits; the token that replaces one is HMAC(key, old token), so a client that
/// retries a refresh whose answer it lost is handed the very same pair again.
package struct TokenService: Sendable {
    /// Kept as bytes because `SymmetricKey` is not `Sendable`.
    private let keyBytes: Data
    var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    /// An HMAC that has absorbed the key, copied for each token. Never mutated after init,
    /// and its digest state is copy-on-write, so copies on many threads at once are safe.
    private nonisolated(unsafe) let keyedHMAC: HMAC<SHA256>

    package init(key: SymmetricKey) {
        keyBytes = key.withUnsafeBytes { Data($0) }
        keyedHMAC = HMAC<SHA256>(key: key)
    }
    package static let accessLifetime: TimeInterval = 3600
    package static let refreshLifetimeDays = 60

    struct AccessClaims: Codable, Equatable {
        var sub: String
        var sid: String
        var iat: Int
        var exp: Int

        /// The claims exactly as `signHS256` writes ours (sorted keys, no spaces), read
        /// without JSONDecoder, since every request carries them. nil for any other spelling,
        /// which then goes through JSONDecoder.
        init?(signedPayload payload: Data) {
            var reader = ExactJSONReader(bytes: payload)
            guard reader.skip(#"{"exp":"#), let exp = reader.integer(),
                  reader.skip(#","iat":"#), let iat = reader.integer(),
                  reader.skip(#","sid":""#), let sid = reader.plainText(),
                  reader.skip(#","sub":""#), let sub = reader.plainText(),
                  reader.skip("}"), reader.atEnd else { return nil }
            self.init(sub: sub, sid: sid, iat: iat, exp: exp)
        }

        init(sub: String, sid: String, iat: Int, exp: Int) {
            self.sub = sub
            self.sid = sid
            self.iat = iat
            self.exp = exp
        }
    }

    /// Reads a payload whose spelling is known exactly; any surprise gives nil.
    private struct ExactJSONReader {
        let bytes: Data
        var position: Data.Index

        init(bytes: Data) {
            self.bytes = bytes
            position = bytes.startIndex
        }

        var atEnd: Bool { position == bytes.endIndex }

        mutating func skip(_ text: StaticString) -> Bool {
            text.withUTF8Buffer { expected in
                guard bytes.endIndex - position >= expected.count,
                      bytes[position..<position + expected.count].elementsEqual(expected) else { return false }
                position += expected.count
                return true
            }
        }

        /// Up to 18 digits, so it cannot overflow.
        mutating func integer() -> Int? {
            var value = 0, digits = 0
            while position < bytes.endIndex, digits < 18, case let byte = bytes[position], byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
                position += 1
            }
            return digits > 0 ? value : nil
        }

        /// The rest of a string up to and including its closing quote, when it holds no escapes.
        mutating func plainText() -> String? {
            guard let quote = bytes[position...].firstIndex(of: UInt8(ascii: "\"")),
                  !bytes[position..<quote].contains(UInt8(ascii: "\\")) else { return nil }
            defer { position = quote + 1 }
            return String(decoding: bytes[position..<quote], as: UTF8.self)
        }
    }

    package struct Identity: Sendable, Equatable {
        package var userID: UUID
        package var sessionID: UUID
        /// When the access token stops being accepted; a realtime socket closes then.
        package var expiresAt: Date

        package init(userID: UUID, sessionID: UUID, expiresAt: Date = .distantFuture) {
            self.userID = userID
            self.sessionID = sessionID
            self.expiresAt = expiresAt
        }

        /// The same caller: user and session. A renewed token is the same identity.
        package static func == (lhs: Identity, rhs: Identity) -> Bool {
            lhs.userID == rhs.userID && lhs.sessionID == rhs.sessionID
        }
    }

    enum Failure: Error {
        case invalid
    }

    func accessToken(for identity: Identity, issuedAt: Date) throws -> String {
        let issued = Int(issuedAt.timeIntervalSince1970)
        let claims = AccessClaims(sub: identity.userID.canonicalText, sid: identity.sessionID.canonicalText, iat: issued, exp: issued + Int(Self.accessLifetime))
        return try JSONWebToken.signHS256(claims, key: key)
    }

    /// Checks signature, algorithm and expiry. Whether the session is still live is for the
    /// database to say, in the same round trip as the request's query.
    package func verifyAccessToken(_ token: String, now: Date = Date()) throws -> Identity {
        guard let jwt = try? JSONWebToken(compact: token), (try? jwt.verifyHS256(keyed: keyedHMAC)) != nil,
              let claims = AccessClaims(signedPayload: jwt.payload) ?? (try? jwt.claims(as: AccessClaims.self)),
              Double(claims.exp) > now.timeIntervalSince1970,
              let user = UUID(canonicalText: claims.sub), let session = UUID(canonicalText: claims.sid) else {
            throw Failure.invalid
        }
        return Identity(userID: user, sessionID: session, expiresAt: Date(timeIntervalSince1970: Double(claims.exp)))
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
    package static func loadKey(path: String?, dataDirectory: String, production: Bool) throws -> SymmetricKey {
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
