import Crypto
package import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
package import Logging
import NIOConcurrencyHelpers
import _CryptoExtras

/// Verifies Sign in with Apple identity tokens against Apple's published keys.
///
/// Keys come from `APPLE_JWKS_FILE` or are fetched from `APPLE_JWKS_URL`; they are
/// cached, and fetched again when a token names a key id the cache lacks (Apple rotates
/// keys), at most once every `refetchInterval` so that junk kids cannot drive traffic.
package final class AppleIdentityVerifier: Sendable {
    package struct Configuration: Sendable {
        package var audiences: Set<String>
        package var jwksURL: URL
        package var jwksFile: String?
        package var leeway: TimeInterval = 60
        package var refetchInterval: TimeInterval = 60

        package init(audiences: Set<String>, jwksURL: URL, jwksFile: String? = nil) {
            self.audiences = audiences
            self.jwksURL = jwksURL
            self.jwksFile = jwksFile
        }
    }

    package struct Identity: Equatable, Sendable {
        package var subject: String
        package var email: String?
    }

    package enum Failure: Error, CustomStringConvertible {
        case invalid(String)
        package var description: String {
            switch self { case .invalid(let reason): "identity token rejected: \(reason)" }
        }
    }

    private struct Claims: Decodable {
        var iss: String
        var sub: String
        var aud: Audience
        var exp: Double
        var iat: Double
        var nonce: String?
        var email: String?
    }

    /// `aud` may be a string or an array of strings.
    private enum Audience: Decodable {
        case one(String), many([String])
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(String.self) { self = .one(value) } else { self = .many(try container.decode([String].self)) }
        }
        var values: [String] {
            switch self { case .one(let value): [value]; case .many(let values): values }
        }
    }

    private struct KeySet: Decodable {
        struct Key: Decodable {
            var kty: String
            var kid: String
            var n: String
            var e: String
            var alg: String?
        }
        var keys: [Key]
    }

    private struct Cache {
        var keys: [String: _RSA.Signing.PublicKey] = [:]
        var fetchedAt: Date?
    }

    package static let issuer = "https://appleid.apple.com"

    package let configuration: Configuration
    private let logger: Logger
    private let cache = NIOLockedValueBox(Cache())

    package init(configuration: Configuration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    package func verify(_ token: String, rawNonce: String?, now: Date = Date()) async throws -> Identity {
        let jwt: JSONWebToken
        do { jwt = try JSONWebToken(compact: token) } catch { throw Failure.invalid("\(error)") }
        guard let kid = jwt.header.kid else { throw Failure.invalid("no key id") }
        let key = try await key(for: kid)
        do { try jwt.verifyRS256(key: key) } catch { throw Failure.invalid("\(error)") }
        let claims: Claims
        do { claims = try jwt.claims(as: Claims.self) } catch { throw Failure.invalid("\(error)") }

        guard claims.iss == Self.issuer else { throw Failure.invalid("wrong issuer") }
        guard claims.aud.values.contains(where: configuration.audiences.contains) else { throw Failure.invalid("wrong audience") }
        let moment = now.timeIntervalSince1970
        guard claims.exp + configuration.leeway >= moment else { throw Failure.invalid("expired") }
        guard claims.iat - configuration.leeway <= moment else { throw Failure.invalid("issued in the future") }
        guard !claims.sub.isEmpty, claims.sub.count <= 255 else { throw Failure.invalid("bad subject") }
        if let expected = claims.nonce {
            guard let rawNonce else { throw Failure.invalid("nonce missing") }
            let hashed = SHA256.hash(data: Data(rawNonce.utf8)).map { String(format: "%02x", $0) }.joined()
            guard hashed == expected else { throw Failure.invalid("nonce mismatch") }
        }
        return Identity(subject: claims.sub, email: claims.email)
    }

    private func key(for kid: String) async throws -> _RSA.Signing.PublicKey {
        let cached = cache.withLockedValue { cache -> (key: _RSA.Signing.PublicKey?, mayRefetch: Bool) in
            let mayRefetch = cache.fetchedAt.map { Date().timeIntervalSince($0) >= configuration.refetchInterval } ?? true
            return (cache.keys[kid], mayRefetch)
        }
        if let key = cached.key { return key }
        guard cached.mayRefetch else { throw Failure.invalid("unknown key id") }
        let keys = try await fetchKeys()
        cache.withLockedValue { $0 = Cache(keys: keys, fetchedAt: Date()) }
        guard let key = keys[kid] else { throw Failure.invalid("unknown key id") }
        return key
    }

    private func fetchKeys() async throws -> [String: _RSA.Signing.PublicKey] {
        let data: Data
        do {
            if let file = configuration.jwksFile {
                data = try Data(contentsOf: URL(fileURLWithPath: file))
            } else {
                var request = URLRequest(url: configuration.jwksURL)
                request.timeoutInterval = 5
                let (body, response) = try await URLSession.shared.data(for: request)
                guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw Failure.invalid("key fetch answered \(response)") }
                data = body
            }
        } catch {
            logger.error("cannot load Apple's keys", metadata: ["error": "\(error)"])
            throw AppleKeysUnavailable()
        }
        let set: KeySet
        do { set = try JSONDecoder().decode(KeySet.self, from: data) } catch {
            logger.error("Apple's key set does not decode", metadata: ["error": "\(error)"])
            throw AppleKeysUnavailable()
        }
        var keys: [String: _RSA.Signing.PublicKey] = [:]
        for key in set.keys where key.kty == "RSA" && (key.alg ?? "RS256") == "RS256" {
            guard let n = Base64URL.decode(key.n), let e = Base64URL.decode(key.e),
                  let publicKey = try? _RSA.Signing.PublicKey(n: n, e: e) else { continue }
            keys[key.kid] = publicKey
        }
        return keys
    }
}

/// Apple's keys could not be had: the sign-in cannot be judged, so it is a 503, not a 401.
package struct AppleKeysUnavailable: Error {}
