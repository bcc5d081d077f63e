import Crypto
import Foundation
import NIOConcurrencyHelpers
import StandInSupport
import TestSupport

/// A local stand-in for https://appleid.apple.com, the parts the server uses: Apple's public keys
/// (`GET /auth/keys`), the authorization-code exchange (`POST /auth/token`) and token revocation
/// (`POST /auth/revoke`), over HTTP/2 and TLS as Apple serves them (`HTTP2StandInServer`).
///
/// The client secret is checked as Apple checks it (`AppleClientSecret`), so a server passing here
/// sends secrets Apple accepts; each refusal is described in `violations`. Authorization codes
/// exist only when the test issues them (`issueCode(subject:)`), once each, as a device's sign-in
/// would. `failNext(_:status:)` and `setDown(_:)` make Apple fail on demand.
///
/// Answers follow Apple's: errors are 400 with `{"error": ...}` (`invalid_request`,
/// `invalid_client`, `invalid_grant`, `unsupported_grant_type`); revoking a token Apple does not
/// know is 200. Only `grant_type=authorization_code` is modelled (a refresh-token grant is
/// `unsupported_grant_type` here).
public final class AppleIDStandIn: Sendable {
    /// One request, whatever its path, in arrival order.
    public struct Call: Sendable {
        public var method: String
        /// Without the query.
        public var path: String
        /// The form fields, decoded (empty for a body that is not a form).
        public var form: [String: String]
        /// The status answered.
        public var status: Int
        public var receivedAt: Date
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// `https://127.0.0.1:<port>`: the base URL, to which the server appends `/auth/...`.
    public let endpoint: URL
    /// The PEM certificate to trust (it is its own CA).
    public let caFile: String
    private let core: Core
    private let server: HTTP2StandInServer

    private init(endpoint: URL, core: Core, server: HTTP2StandInServer) {
        self.endpoint = endpoint
        self.caFile = server.caFile
        self.core = core
        self.server = server
    }

    /// - Parameters:
    ///   - teamID, clientID, keyID: what the client secret must carry (`iss`, `sub`, header `kid`);
    ///     `clientID` is also the required `client_id` field.
    ///   - clientSecretKey: verifies the client secret's ES256 signature.
    ///   - jwks: the body of `GET /auth/keys`, as given.
    public static func start(
        teamID: String,
        clientID: String,
        keyID: String,
        clientSecretKey: P256.Signing.PublicKey,
        jwks: Data
    ) async throws -> AppleIDStandIn {
        let secret = AppleClientSecret(teamID: teamID, clientID: clientID, keyID: keyID, publicKey: clientSecretKey)
        let core = Core(clientID: clientID, secret: secret, jwks: jwks)
        let server = try await HTTP2StandInServer.start(name: "AppleIDStandIn") { core.answer($0) }
        guard let endpoint = URL(string: server.endpoint) else {
            try? await server.shutdown()
            throw Failure(description: "AppleIDStandIn: \(server.endpoint) is not a URL")
        }
        return AppleIDStandIn(endpoint: endpoint, core: core, server: server)
    }

    /// A new one-time authorization code for `subject` (Apple's user identifier), as a device
    /// would receive after signing in; the server then exchanges it at `/auth/token`.
    public func issueCode(subject: String) -> String {
        let code = "c.\(Self.randomHex())"
        core.state.withLockedValue { $0.codes[code] = subject }
        return code
    }

    /// The next `count` requests to `/auth/token` or `/auth/revoke` answer `status` with
    /// `{"error":"server_error"}`, without acting. Adds to failures already pending.
    public func failNext(_ count: Int, status: Int = 503) {
        core.state.withLockedValue { $0.pendingFailures += Array(repeating: status, count: max(0, count)) }
    }

    /// While down, every request to `/auth/token` or `/auth/revoke` answers 503 (pending
    /// `failNext` failures wait until it is up again).
    public func setDown(_ down: Bool) {
        core.state.withLockedValue { $0.isDown = down }
    }

    /// Every request, in arrival order.
    public var calls: [Call] { core.state.withLockedValue { $0.calls } }
    /// Every refresh token issued (revoked ones too): token → subject.
    public var issuedRefreshTokens: [String: String] { core.state.withLockedValue { $0.issuedRefreshTokens } }
    /// Refresh tokens revoked, in order; a token is revoked once, after which Apple no longer knows it.
    public var revokedTokens: [String] { core.state.withLockedValue { $0.revokedTokens } }
    /// Every refused request and connection: what was wrong, one entry each, in order.
    public var violations: [String] { server.violations }
    /// Distinct client secrets seen (valid or not), in first-seen order.
    public var clientSecrets: [String] { core.state.withLockedValue { $0.clientSecrets } }
    /// TCP connections accepted so far (a well-behaved client reuses one).
    public var connectionsAccepted: Int { server.connectionsAccepted }

    /// Polls until at least `count` calls to `path` were answered; throws when `timeout` passes first.
    public func waitForCalls(path: String, count: Int, timeout: Duration) async throws -> [Call] {
        do {
            return try await waitForValue("\(count) call(s) to \(path)", within: timeout) {
                let current = calls.filter { $0.path == path }
                return current.count >= count ? current : nil
            }
        } catch {
            let violations = self.violations
            throw Failure(
                description: "AppleIDStandIn: waited \(timeout) for \(count) call(s) to \(path), got \(calls.filter { $0.path == path }.count)"
                    + (violations.isEmpty ? "" : "; violations: \(violations)")
            )
        }
    }

    /// Stops listening and closes every open connection. Safe to call more than once.
    public func shutdown() async throws {
        try await server.shutdown()
    }

    fileprivate static func randomHex() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }
}

// MARK: - Routes

extension AppleIDStandIn {
    fileprivate struct State {
        var codes: [String: String] = [:]
        var liveRefreshTokens: [String: String] = [:]
        var issuedRefreshTokens: [String: String] = [:]
        var revokedTokens: [String] = []
        var clientSecrets: [String] = []
        var seenClientSecrets: Set<String> = []
        var pendingFailures: [Int] = []
        var isDown = false
        var calls: [Call] = []
    }

    /// A request the stand-in refuses; `violation` says why, when the client is at fault.
    fileprivate struct Refusal: Error {
        var status: Int
        var error: String
        var violation: String?
    }

    fileprivate final class Core: Sendable {
        let clientID: String
        let secret: AppleClientSecret
        let jwks: Data
        let state = NIOLockedValueBox(State())

        init(clientID: String, secret: AppleClientSecret, jwks: Data) {
            self.clientID = clientID
            self.secret = secret
            self.jwks = jwks
        }

        func answer(_ request: HTTP2StandInServer.Request) -> HTTP2StandInServer.Response {
            let path = String(request.path.prefix { $0 != "?" })
            let form = Self.isForm(request) ? (try? Self.parseForm(request.body)) ?? [:] : [:]
            var response: HTTP2StandInServer.Response
            do {
                response = try route(request, path: path)
            } catch let refusal as Refusal {
                response = Self.json(status: refusal.status, #"{"error":"\#(refusal.error)"}"#)
                response.violation = refusal.violation.map {
                    "\(request.method) \(path): \(refusal.status) \(refusal.error): \($0)"
                }
            } catch {
                response = Self.json(status: 500, #"{"error":"server_error"}"#)
            }
            let call = Call(
                method: request.method,
                path: path,
                form: form,
                status: response.status,
                receivedAt: request.receivedAt
            )
            state.withLockedValue { $0.calls.append(call) }
            return response
        }

        private func route(_ request: HTTP2StandInServer.Request, path: String) throws -> HTTP2StandInServer.Response {
            switch path {
            case "/auth/keys":
                guard request.method == "GET" || request.method == "HEAD" else {
                    throw Refusal(status: 405, error: "method_not_allowed", violation: "method is \(request.method), not GET")
                }
                return HTTP2StandInServer.Response(
                    status: 200,
                    headers: [("content-type", "application/json")],
                    body: request.method == "HEAD" ? Data() : jwks
                )
            case "/auth/token", "/auth/revoke":
                guard request.method == "POST" else {
                    throw Refusal(status: 405, error: "method_not_allowed", violation: "method is \(request.method), not POST")
                }
                if let status = takeFailure() {
                    return Self.json(status: status, #"{"error":"server_error"}"#)
                }
                let form = try Self.checkedForm(request)
                try authenticate(form)
                return path == "/auth/token" ? try exchange(form) : revoke(form)
            default:
                throw Refusal(status: 404, error: "not_found", violation: "no such path")
            }
        }

        /// The status of an injected failure, if one is due: down first, then `failNext`'s queue.
        private func takeFailure() -> Int? {
            state.withLockedValue { state in
                if state.isDown { return 503 }
                return state.pendingFailures.isEmpty ? nil : state.pendingFailures.removeFirst()
            }
        }

        /// `client_id` and `client_secret`, as Apple authenticates the client.
        private func authenticate(_ form: [String: String]) throws {
            guard let id = form["client_id"], !id.isEmpty else {
                throw Refusal(status: 400, error: "invalid_request", violation: "no client_id")
            }
            guard id == clientID else {
                throw Refusal(status: 400, error: "invalid_client", violation: "client_id is '\(id)', not '\(clientID)'")
            }
            guard let token = form["client_secret"], !token.isEmpty else {
                throw Refusal(status: 400, error: "invalid_request", violation: "no client_secret")
            }
            state.withLockedValue { state in
                if state.seenClientSecrets.insert(token).inserted { state.clientSecrets.append(token) }
            }
            if let problem = secret.problem(with: token, now: Date()) {
                throw Refusal(status: 400, error: "invalid_client", violation: "client_secret: \(problem)")
            }
        }

        /// `grant_type=authorization_code`: a code issued by the test, once.
        private func exchange(_ form: [String: String]) throws -> HTTP2StandInServer.Response {
            guard let grantType = form["grant_type"], !grantType.isEmpty else {
                throw Refusal(status: 400, error: "invalid_request", violation: "no grant_type")
            }
            guard grantType == "authorization_code" else {
                throw Refusal(
                    status: 400,
                    error: "unsupported_grant_type",
                    violation: "grant_type is '\(grantType)', not authorization_code"
                )
            }
            guard let code = form["code"], !code.isEmpty else {
                throw Refusal(status: 400, error: "invalid_request", violation: "no code")
            }
            let accessToken = "a.\(AppleIDStandIn.randomHex())"
            let refreshToken = "r.\(AppleIDStandIn.randomHex())"
            let subject: String? = state.withLockedValue { state in
                guard let subject = state.codes.removeValue(forKey: code) else { return nil }
                state.liveRefreshTokens[refreshToken] = subject
                state.issuedRefreshTokens[refreshToken] = subject
                return subject
            }
            // Not a violation: a test provokes it on purpose (a reused or made-up code).
            guard let subject else { throw Refusal(status: 400, error: "invalid_grant") }
            let idToken = unsignedIdentityToken(subject: subject)
            return Self.json(
                status: 200,
                #"{"access_token":"\#(accessToken)","token_type":"Bearer","expires_in":3600,"#
                    + #""refresh_token":"\#(refreshToken)","id_token":"\#(idToken)"}"#
            )
        }

        /// A known refresh token is revoked and forgotten; anything else is 200 too, as at Apple.
        private func revoke(_ form: [String: String]) -> HTTP2StandInServer.Response {
            if let token = form["token"] {
                state.withLockedValue { state in
                    if state.liveRefreshTokens.removeValue(forKey: token) != nil { state.revokedTokens.append(token) }
                }
            }
            return HTTP2StandInServer.Response(status: 200)
        }

        /// Apple's `id_token` claims, unsigned (`alg` "none"): the stand-in has no Apple key. A server
        /// may read `sub` from it; one that verifies it against `jwks` refuses it, as it should.
        private func unsignedIdentityToken(subject: String) -> String {
            let now = Int(Date().timeIntervalSince1970)
            let header = #"{"alg":"none"}"#
            let claims: [String: Any] = [
                "iss": AppleClientSecret.audience, "aud": clientID, "sub": subject, "iat": now, "exp": now + 600,
            ]
            let data = (try? JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])) ?? Data()
            return "\(AppleClientSecret.base64URLEncode(Data(header.utf8))).\(AppleClientSecret.base64URLEncode(data))."
        }

        private static func isForm(_ request: HTTP2StandInServer.Request) -> Bool {
            (request.headers["content-type"] ?? "").lowercased().hasPrefix("application/x-www-form-urlencoded")
        }

        /// The body as a form, refusing a request that is not one.
        private static func checkedForm(_ request: HTTP2StandInServer.Request) throws -> [String: String] {
            guard isForm(request) else {
                throw Refusal(
                    status: 400,
                    error: "invalid_request",
                    violation: "content-type is \(request.headers["content-type"].map { "'\($0)'" } ?? "missing"), "
                        + "not application/x-www-form-urlencoded"
                )
            }
            do {
                return try parseForm(request.body)
            } catch let problem as FormProblem {
                throw Refusal(status: 400, error: "invalid_request", violation: problem.description)
            }
        }

        fileprivate struct FormProblem: Error, CustomStringConvertible {
            var description: String
        }

        /// `application/x-www-form-urlencoded`: `+` is a space, then percent-decoding; a field given
        /// twice is refused (RFC 6749 §3.1).
        private static func parseForm(_ body: Data) throws -> [String: String] {
            var fields: [String: String] = [:]
            let text = String(decoding: body, as: UTF8.self)
            for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                func decode(_ part: Substring) throws -> String {
                    guard let value = part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding else {
                        throw FormProblem(description: "the form field '\(pair)' is not percent-encoded")
                    }
                    return value
                }
                let name = try decode(parts[0])
                let value = parts.count > 1 ? try decode(parts[1]) : ""
                guard fields[name] == nil else {
                    throw FormProblem(description: "the form field '\(name)' is given more than once")
                }
                fields[name] = value
            }
            return fields
        }

        private static func json(status: Int, _ body: String) -> HTTP2StandInServer.Response {
            HTTP2StandInServer.Response(
                status: status,
                headers: [("content-type", "application/json;charset=UTF-8"), ("cache-control", "no-store")],
                body: Data(body.utf8)
            )
        }
    }
}
