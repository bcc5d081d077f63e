package import Crypto
package import Foundation
import JWTKit
import PostgresClient

/// Issues and checks our own tokens.
///
/// Access tokens are HS256 JWTs (`sub` user, `sid` session, 1 h), signed and verified by
/// jwt-kit. Refresh tokens are 256 random bits; the token that replaces one is
/// HMAC(key, old token), so a client that retries a refresh whose answer it lost is handed
/// the very same pair again.
package struct TokenService: Sendable {
    /// Kept as bytes because `SymmetricKey` is not `Sendable`.
    private let keyBytes: Data
    var key: SymmetricKey { SymmetricKey(data: keyBytes) }

    /// The HS256 key in a jwt-kit collection. Keys are added to the collection (an actor)
    /// asynchronously, so `init` starts that and every use waits for it, which after the
    /// first time costs no more than reading a finished task's value.
    private let keys: Task<JWTKeyCollection, Never>

    package init(key: SymmetricKey) {
        keyBytes = key.withUnsafeBytes { Data($0) }
        let hmac = HMACKey(key: key)
        keys = Task {
            let parser = AlgorithmPinningParser(algorithm: "HS256")
            return await JWTKeyCollection(defaultJWTParser: parser, defaultJWTSerializer: Self.serializer)
                .add(hmac: hmac, digestAlgorithm: .sha256, parser: parser, serializer: Self.serializer)
        }
    }
    package static let accessLifetime: Duration = .seconds(3600)
    package static let refreshLifetimeDays = 60

    /// Tokens are small; anything longer than this is refused before it is parsed.
    package static let maximumTokenLength = 8 * 1024

    /// Sorted keys, so equal claims give equal tokens (a retried refresh gets the very same
    /// access token), and the header is always `{"alg":"HS256","typ":"JWT"}`.
    private static let serializer: DefaultJWTSerializer = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .secondsSince1970
        return DefaultJWTSerializer(jsonEncoder: encoder)
    }()

    struct AccessClaims: JWTPayload, Equatable {
        var sub: String
        var sid: String
        var iat: Int
        var exp: Int

        /// The moment `verify(using:)` checks expiry against: `verifyAccessToken`'s `now`.
        /// jwt-kit calls `verify(using:)` with the algorithm only, so it comes as a task local.
        @TaskLocal static var verificationDate: Date?

        func verify(using algorithm: some JWTAlgorithm) async throws {
            try ExpirationClaim(value: Date(timeIntervalSince1970: TimeInterval(exp)))
                .verifyNotExpired(currentDate: Self.verificationDate ?? Date())
        }

        /// The claims exactly as `serializer` writes ours (sorted keys, no spaces), read
        /// without JSONDecoder, since every request carries them (see `ClaimsDecoder`). nil
        /// for any other spelling, which then goes through JSONDecoder.
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

    package enum Failure: Error {
        case invalid
        /// Signed by us, but past its `exp`: the client should refresh, not sign in again.
        case expired
    }

    func accessToken(for identity: Identity, issuedAt: Date) async throws -> String {
        let issued = Int(issuedAt.timeIntervalSince1970)
        let claims = AccessClaims(sub: identity.userID.canonicalText, sid: identity.sessionID.canonicalText, iat: issued, exp: issued + Int(Self.accessLifetime.wholeSeconds))
        return try await keys.value.sign(claims)
    }

    /// Checks length, signature, algorithm (HS256 only) and expiry against `now`. Whether
    /// the session is still live is for the database to say, in the same round trip as the
    /// request's query.
    package func verifyAccessToken(_ token: String, now: Date = Date()) async throws -> Identity {
        guard token.utf8.count <= Self.maximumTokenLength else { throw Failure.invalid }
        let keys = await self.keys.value
        let claims: AccessClaims
        do {
            claims = try await AccessClaims.$verificationDate.withValue(now) {
                try await keys.verify(token, as: AccessClaims.self)
            }
        } catch let error as JWTError where error.errorType == .claimVerificationFailure {
            // The signature held (jwt-kit verifies it before the claims): only expiry is left.
            throw Failure.expired
        } catch {
            throw Failure.invalid
        }
        guard let user = UUID(canonicalText: claims.sub), let session = UUID(canonicalText: claims.sid) else {
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
        try SecretKeyFile.jwt.load(path: path, dataDirectory: dataDirectory, production: production)
    }
}

/// Parses a compact JWS for jwt-kit once its signature has verified, and refuses it unless
/// its header names `algorithm`: jwt-kit picks the key by `kid` and verifies with that key's
/// own algorithm, but never compares that with the header's `alg`.
///
/// Our own access tokens take a short path: their header is compared byte for byte with
/// the one we sign, and their claims are read without JSONDecoder when spelt as we spell
/// them (`TokenService.AccessClaims(signedPayload:)`).
struct AlgorithmPinningParser: JWTParser {
    let algorithm: String
    var jsonDecoder: any JWTJSONDecoder = ClaimsDecoder()

    init(algorithm: String) {
        self.algorithm = algorithm
    }

    /// The header of every access token we sign, base64url-encoded.
    private static let ownHeader = Array(Base64URL.encode(Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8)).utf8)

    func parse<Payload: JWTPayload>(_ token: some DataProtocol, as _: Payload.Type) throws -> (header: JWTHeader, payload: Payload, signature: Data) {
        let parts = try getTokenParts(token)
        let header: JWTHeader
        if parts.header.elementsEqual(Self.ownHeader) {
            header = ["alg": .string("HS256"), "typ": .string("JWT")]
        } else {
            header = try Self.decode(JWTHeader.self, base64URL: parts.header, using: jsonDecoder)
        }
        guard let alg = header.alg, alg == algorithm else { throw JWTError.unsupportedAlgorithm(alg: header.alg) }
        let payload = try Self.decode(Payload.self, base64URL: parts.payload, using: jsonDecoder)
        guard let signature = Base64URL.decode(parts.signature) else { throw JWTError.malformedToken(reason: "signature is not base64url") }
        return (header, payload, signature)
    }

    /// The header of a token not yet verified: only to choose a key, never to trust.
    static func unverifiedHeader(of token: String) throws -> JWTHeader {
        try decode(JWTHeader.self, base64URL: DefaultJWTParser().getTokenParts(Array(token.utf8)).header, using: ClaimsDecoder())
    }

    private static func decode<T: Decodable>(_ type: T.Type, base64URL part: ArraySlice<UInt8>, using decoder: any JWTJSONDecoder) throws -> T {
        guard let data = Base64URL.decode(part) else { throw JWTError.malformedToken(reason: "not base64url") }
        do {
            return try decoder.decode(T.self, from: data)
        } catch {
            throw JWTError.malformedToken(reason: "\(T.self) does not decode")
        }
    }
}

/// JSONDecoder, except that access claims spelt exactly as we sign them are read directly.
struct ClaimsDecoder: JWTJSONDecoder {
    private let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }()

    func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        if T.self == TokenService.AccessClaims.self, let claims = TokenService.AccessClaims(signedPayload: data) as? T {
            return claims
        }
        return try decoder.decode(T.self, from: data)
    }
}
