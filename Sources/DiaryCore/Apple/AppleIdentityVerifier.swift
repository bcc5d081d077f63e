import Crypto
package import Foundation
import JWTKit
package import Logging
import NIOConcurrencyHelpers
import PostgresClient

/// Verifies what Apple signs, identity tokens and server-to-server notifications, against
/// Apple's published keys.
///
/// Keys come from `APPLE_JWKS_FILE` or are fetched by `fetchKeys` (the process's HTTP
/// client, from `APPLE_JWKS_URL`) into a jwt-kit key collection, which checks the
/// signature (RS256 only); the claims are checked here.
/// The keys are cached, and fetched again when a token names a key id the cache lacks
/// (Apple rotates keys), at most once every `refetchInterval` so that junk kids cannot
/// drive traffic.
package final class AppleIdentityVerifier: Sendable {
    package struct Configuration: Sendable {
        package var audiences: Set<String>
        package var jwksURL: URL
        package var jwksFile: String?
        package var leeway: Duration = .seconds(60)
        package var refetchInterval: Duration = .seconds(60)

        package init(audiences: Set<String>, jwksURL: URL, jwksFile: String? = nil) {
            self.audiences = audiences
            self.jwksURL = jwksURL
            self.jwksFile = jwksFile
        }
    }

    package struct Identity: Equatable, Sendable {
        package var subject: String
        package var email: String?
        /// The bundle id the token was issued to: the client id its code is exchanged as.
        package var audience: String = ""
    }

    package enum Failure: Error, CustomStringConvertible {
        case invalid(String)
        package var description: String {
            switch self { case .invalid(let reason): "identity token rejected: \(reason)" }
        }
    }

    private struct Claims: JWTPayload {
        var iss: String
        var sub: String
        /// A string or an array of strings.
        var aud: AudienceClaim
        var exp: Double
        var iat: Double
        var nonce: String?
        var email: String?

        /// The claims are checked by `verify(_:rawNonce:now:)`, which knows the audiences,
        /// the leeway and the moment; here only that the key was an RS256 one.
        func verify(using algorithm: some JWTAlgorithm) async throws {
            guard algorithm.name == "RS256" else { throw JWTError.unsupportedAlgorithm(alg: algorithm.name) }
        }
    }

    private struct Cache {
        var keys: JWTKeyCollection?
        /// The key ids `keys` holds: jwt-kit falls back to its default key for a kid it
        /// lacks, so an unknown kid is caught here, where it also triggers a refetch.
        var kids: Set<String> = []
        var fetchedAt: Date?
    }

    package static let issuer = "https://appleid.apple.com"
    /// Notifications older than this are refused: well inside the 90 days their jtis are kept.
    package static let notificationMaximumAge: Duration = .seconds(30 * 24 * 3600)

    package let configuration: Configuration
    private let fetchKeys: (@Sendable () async throws -> Data)?
    private let logger: Logger
    private let cache = NIOLockedValueBox(Cache())

    /// `fetchKeys` reads Apple's key set when `configuration.jwksFile` does not name one.
    package init(configuration: Configuration, fetchKeys: (@Sendable () async throws -> Data)? = nil, logger: Logger) {
        self.configuration = configuration
        self.fetchKeys = fetchKeys
        self.logger = logger
    }

    /// An identity token from the app. The nonce binds it to this sign-in: when either side
    /// has one, both must, and the token's must be hex(SHA-256(raw nonce)).
    package func verify(_ token: String, rawNonce: String?, now: Date = Date()) async throws -> Identity {
        let claims = try await verified(token, as: Claims.self)
        try checkIssuerAndAudience(iss: claims.iss, aud: claims.aud)
        let moment = now.timeIntervalSince1970
        guard claims.exp + configuration.leeway.totalSeconds >= moment else { throw Failure.invalid("expired") }
        guard claims.iat - configuration.leeway.totalSeconds <= moment else { throw Failure.invalid("issued in the future") }
        guard !claims.sub.isEmpty, claims.sub.count <= 255 else { throw Failure.invalid("bad subject") }
        switch (claims.nonce, rawNonce) {
        case (nil, nil):
            break
        case (let expected?, let rawNonce?):
            let hashed = SHA256.hash(data: Data(rawNonce.utf8)).map { String(format: "%02x", $0) }.joined()
            guard hashed == expected else { throw Failure.invalid("nonce mismatch") }
        case (nil, _?):
            throw Failure.invalid("the request has a nonce the token does not carry")
        case (_?, nil):
            throw Failure.invalid("nonce missing")
        }
        return Identity(subject: claims.sub, email: claims.email, audience: claims.aud.value.first(where: configuration.audiences.contains) ?? "")
    }

    /// A server-to-server notification's `payload`: Apple's signature, issuer and one of our
    /// audiences, then the event its `events` claim (a JSON string) describes.
    package func verifyNotification(_ payload: String, now: Date = Date()) async throws -> AppleNotification {
        let claims = try await verified(payload, as: AppleNotification.Claims.self)
        try checkIssuerAndAudience(iss: claims.iss, aud: claims.aud)
        guard claims.iat - configuration.leeway.totalSeconds <= now.timeIntervalSince1970 else { throw Failure.invalid("issued in the future") }
        // Applied jtis are kept 90 days (apple_notifications); an older notification could be
        // a replay the table no longer remembers.
        guard claims.iat >= now.timeIntervalSince1970 - Self.notificationMaximumAge.totalSeconds else { throw Failure.invalid("issued more than 30 days ago") }
        return try AppleNotification(claims: claims)
    }

    /// The claims of a compact JWS whose RS256 signature one of Apple's keys verifies.
    private func verified<Payload: JWTPayload>(_ token: String, as _: Payload.Type) async throws -> Payload {
        guard token.utf8.count <= TokenService.maximumTokenLength else { throw Failure.invalid("malformed token: too long") }
        let header: JWTHeader
        do { header = try AlgorithmPinningParser.unverifiedHeader(of: token) } catch { throw Failure.invalid("\(error)") }
        guard header.alg == "RS256" else { throw Failure.invalid("algorithm \(header.alg ?? "(none)") is not accepted") }
        guard let kid = header.kid else { throw Failure.invalid("no key id") }
        let keys = try await keys(holding: kid)
        do { return try await keys.verify(token, as: Payload.self) } catch { throw Failure.invalid("\(error)") }
    }

    private func checkIssuerAndAudience(iss: String, aud: AudienceClaim) throws {
        guard iss == Self.issuer else { throw Failure.invalid("wrong issuer") }
        guard aud.value.contains(where: configuration.audiences.contains) else { throw Failure.invalid("wrong audience") }
    }

    /// The cached keys if they hold `kid`, else freshly fetched ones if they may be.
    private func keys(holding kid: String) async throws -> JWTKeyCollection {
        let cached = cache.withLockedValue { cache -> (keys: JWTKeyCollection?, mayRefetch: Bool) in
            let mayRefetch = cache.fetchedAt.map { Date().timeIntervalSince($0) >= configuration.refetchInterval.totalSeconds } ?? true
            return (cache.kids.contains(kid) ? cache.keys : nil, mayRefetch)
        }
        if let keys = cached.keys { return keys }
        guard cached.mayRefetch else { throw Failure.invalid("unknown key id") }
        let (keys, kids) = try await loadKeys()
        cache.withLockedValue { $0 = Cache(keys: keys, kids: kids, fetchedAt: Date()) }
        guard kids.contains(kid) else { throw Failure.invalid("unknown key id") }
        return keys
    }

    private func loadKeys() async throws -> (JWTKeyCollection, Set<String>) {
        let data: Data
        do {
            if let file = configuration.jwksFile {
                data = try Data(contentsOf: URL(fileURLWithPath: file))
            } else if let fetchKeys {
                data = try await fetchKeys()
            } else {
                throw Failure.invalid("no way to read Apple's keys: neither a key file nor an HTTP client")
            }
        } catch {
            logger.error("cannot load Apple's keys", metadata: ["error": "\(error)"])
            throw AppleKeysUnavailable()
        }
        let set: JWKS
        do { set = try JSONDecoder().decode(JWKS.self, from: data) } catch {
            logger.error("Apple's key set does not decode", metadata: ["error": "\(error)"])
            throw AppleKeysUnavailable()
        }
        // RS256 keys only, each pinned to RS256 (jwt-kit would otherwise take the algorithm
        // of a key without `alg` from the token's header), and the header must say RS256 too.
        // Keys are added one by one so that one it cannot use does not cost the others.
        let keys = JWTKeyCollection(defaultJWTParser: AlgorithmPinningParser(algorithm: "RS256"))
        var kids: Set<String> = []
        for var key in set.keys where key.keyType == .rsa && (key.algorithm ?? .rs256) == .rs256 {
            guard let kid = key.keyIdentifier?.string else { continue }
            key.algorithm = .rs256
            do {
                try await keys.add(jwk: key)
                kids.insert(kid)
            } catch {
                logger.warning("skipping an Apple key jwt-kit cannot use", metadata: ["kid": "\(kid)", "error": "\(error)"])
            }
        }
        return (keys, kids)
    }
}

/// Apple's keys could not be had: the sign-in cannot be judged, so it is a 503, not a 401.
package struct AppleKeysUnavailable: Error {}
