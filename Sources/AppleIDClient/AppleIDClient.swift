public import AsyncHTTPClient
public import Foundation
import JWTKit
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// Apple's Sign in with Apple REST API (`https://appleid.apple.com`, or a stand-in): the
/// public keys, the authorization-code exchange and token revocation. It shares the
/// process's HTTP client, and knows nothing of accounts.
public final class AppleIDClient: Sendable {
    public let baseURL: URL
    /// Without them, codes cannot be exchanged nor tokens revoked; the keys still can be read.
    public let credentials: AppleIDCredentials?
    private let clientSecret: AppleClientSecret?
    private let http: HTTPClient
    private let requestTimeout: TimeAmount

    public static let defaultBaseURL = URL(string: "https://appleid.apple.com")!

    public init(baseURL: URL = AppleIDClient.defaultBaseURL, credentials: AppleIDCredentials?, http: HTTPClient, requestTimeout: Duration = .seconds(5)) throws {
        self.baseURL = baseURL
        self.credentials = credentials
        clientSecret = try credentials.map { try AppleClientSecret(credentials: $0) }
        self.http = http
        self.requestTimeout = TimeAmount(requestTimeout)
    }

    /// Tokens are small; a larger answer is not Apple's.
    static let maximumResponseBytes = 256 * 1024

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// What Apple answered a POST: 200 with its body, an OAuth error (`{"error": ...}`) with
    /// its status, or nothing usable (connection, TLS, timeout).
    public enum Answer: Sendable, Equatable {
        case ok(Data)
        case refused(status: Int, error: String)
        case failed(String)
    }

    /// Apple's JWKS (`GET {APPLE_AUTH_URL}/auth/keys`, unless a key set is named elsewhere), as bytes.
    public static func keys(at url: URL, using http: HTTPClient, timeout: Duration = .seconds(5)) async throws -> Data {
        let request = HTTPClientRequest(url: url.absoluteString)
        let response = try await http.execute(request, timeout: TimeAmount(timeout))
        let body = try await response.body.collect(upTo: Self.maximumResponseBytes)
        guard response.status == .ok else { throw Failure(description: "Apple's keys answered HTTP \(response.status.code)") }
        return Data(buffer: body)
    }

    /// The outcome of exchanging an authorization code.
    public enum Exchange: Sendable, Equatable {
        /// Apple's refresh token, and the `sub` of the ID token that came with it.
        case refreshToken(String, subject: String?)
        case refused(status: Int, error: String)
        case failed(String)
    }

    /// Apple's refresh tokens are short; a longer one is not kept.
    public static let maximumRefreshTokenBytes = 2048

    /// POST /auth/token with `grant_type=authorization_code`, as `clientID` (the bundle id
    /// the code was issued to): the refresh token Apple issues for the code.
    public func exchange(code: String, clientID: String) async -> Exchange {
        switch await post("auth/token", ["code": code, "grant_type": "authorization_code"], clientID: clientID) {
        case .ok(let body):
            guard let tokens = try? JSONDecoder().decode(TokenResponse.self, from: body), let refresh = tokens.refresh_token, !refresh.isEmpty else {
                return .failed("the token response has no refresh_token")
            }
            guard refresh.utf8.count <= Self.maximumRefreshTokenBytes else { return .failed("the refresh token is longer than \(Self.maximumRefreshTokenBytes) bytes") }
            return .refreshToken(refresh, subject: tokens.id_token.flatMap(Self.subject(ofIDToken:)))
        case .refused(let status, let error): return .refused(status: status, error: error)
        case .failed(let why): return .failed(why)
        }
    }

    /// POST /auth/revoke with `token_type_hint=refresh_token`, as the client the token was issued to.
    public func revoke(refreshToken: String, clientID: String) async -> Answer {
        await post("auth/revoke", ["token": refreshToken, "token_type_hint": "refresh_token"], clientID: clientID)
    }

    private struct TokenResponse: Decodable {
        var refresh_token: String?
        var id_token: String?
    }

    private struct IDTokenClaims: JWTPayload {
        var sub: String

        func verify(using algorithm: some JWTAlgorithm) async throws {}
    }

    /// The `sub` of the ID token Apple returned over this TLS connection: parsed by jwt-kit,
    /// not verified again, to tell whose code it was.
    static func subject(ofIDToken token: String) -> String? {
        (try? DefaultJWTParser().parse(Array(token.utf8), as: IDTokenClaims.self))?.payload.sub
    }

    private struct OAuthError: Decodable {
        var error: String
    }

    private func post(_ path: String, _ fields: [String: String], clientID: String) async -> Answer {
        guard let clientSecret else { return .failed("Sign in with Apple's key is not configured") }
        do {
            var form = fields
            form["client_id"] = clientID
            form["client_secret"] = try await clientSecret.secret(for: clientID)
            var request = HTTPClientRequest(url: baseURL.appendingPathComponent(path).absoluteString)
            request.method = .POST
            request.headers.add(name: "content-type", value: "application/x-www-form-urlencoded")
            request.headers.add(name: "accept", value: "application/json")
            request.body = .bytes(ByteBuffer(string: Self.formEncoded(form)))
            let response = try await http.execute(request, timeout: requestTimeout)
            let body = Data(buffer: try await response.body.collect(upTo: Self.maximumResponseBytes))
            if response.status == .ok { return .ok(body) }
            let error = (try? JSONDecoder().decode(OAuthError.self, from: body))?.error ?? "HTTP \(response.status.code)"
            return .refused(status: Int(response.status.code), error: error)
        } catch {
            return .failed("\(error)")
        }
    }

    /// `application/x-www-form-urlencoded`, keys sorted so that a request reads the same each time.
    static func formEncoded(_ fields: [String: String]) -> String {
        var allowed = CharacterSet.alphanumerics.intersection(CharacterSet(charactersIn: Unicode.Scalar(0)..<Unicode.Scalar(128)))
        allowed.insert(charactersIn: "-._~")
        return fields.sorted { $0.key < $1.key }.map { key, value in
            "\(key.addingPercentEncoding(withAllowedCharacters: allowed) ?? key)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }.joined(separator: "&")
    }
}
