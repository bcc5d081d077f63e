import Crypto
import Foundation
import NIOConcurrencyHelpers
import StandInSupport
import TestSupport

/// A local stand-in for Apple's Push Notification service, speaking its real protocol: HTTP/2 over
/// TLS (ALPN "h2" only), many concurrent streams on one connection, `POST /3/device/<token>`.
///
/// Every request is validated as APNs does (path, provider JWT signed with ES256, the `apns-*`
/// headers, the payload). A request that fails is described in `violations` and answered as Apple
/// would, without asking the responder; a request that passes is recorded in `requests` and then
/// answered by the responder (`.ok` unless told otherwise with `respond(_:)`).
///
/// TLS, ALPN, HTTP/2 and the self-signed certificate are `HTTP2StandInServer`'s; this type is only
/// APNs' protocol. The `endpoint` is `https://127.0.0.1:<port>`: async-http-client verifies the IP
/// SAN of the certificate in `caFile` (checked by the self-test).
///
/// Deliberate strictness, so that a client passing here also passes at Apple:
/// - the JWT's `iat` must be an integer number of seconds (jwt-kit's default serializer writes a
///   fractional `Date`, which is reported as `InvalidProviderToken`);
/// - `apns-priority` and `apns-push-type` must be present (Apple would default them).
/// Status codes follow Apple's table: a method other than POST is 405 `MethodNotAllowed`, a payload
/// over 4096 bytes is 413 `PayloadTooLarge`; an unparsable payload or one without an `aps`
/// dictionary is 400 `PayloadEmpty` (Apple has no closer reason).
public final class APNSStandIn: Sendable {
    public struct Request: Sendable {
        /// From the path `/3/device/<token>`.
        public var deviceToken: String
        /// Lower-cased names, pseudo-headers left out; repeated headers joined with ", ".
        public var headers: [String: String]
        public var body: Data
        /// The bearer token from `authorization: bearer <jwt>`.
        public var providerToken: String
        public var receivedAt: Date
        /// The body as JSON (empty when it is not a JSON object).
        public var payload: [String: Any] {
            ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any]) ?? [:]
        }
    }

    public indirect enum Answer: Sendable {
        /// 200, with an `apns-id` header and an empty body.
        case ok
        /// `status` with the JSON body `{"reason": reason}` (and `"timestamp"` for 410); a
        /// `retry-after` header when `retryAfter` is given.
        case refuse(status: Int, reason: String, retryAfter: Int? = nil)
        /// `answer`, after a delay.
        case delayed(milliseconds: Int, Answer)
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// `https://127.0.0.1:<port>`.
    public let endpoint: String
    /// The PEM certificate to trust (it is its own CA).
    public let caFile: String
    public let port: Int
    private let core: Core
    private let server: HTTP2StandInServer

    private init(core: Core, server: HTTP2StandInServer) {
        self.endpoint = server.endpoint
        self.caFile = server.caFile
        self.port = server.port
        self.core = core
        self.server = server
    }

    /// - Parameters:
    ///   - teamID, keyID: what the provider JWT must carry (`iss`, header `kid`).
    ///   - publicKey: verifies the JWT's ES256 signature.
    ///   - topic: the required `apns-topic`.
    ///   - maxConcurrentStreams: the HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS advertised (Apple: 1000).
    public static func start(
        teamID: String,
        keyID: String,
        publicKey: P256.Signing.PublicKey,
        topic: String,
        maxConcurrentStreams: Int = 1000
    ) async throws -> APNSStandIn {
        let core = Core(teamID: teamID, keyID: keyID, publicKey: publicKey, topic: topic)
        let server = try await HTTP2StandInServer.start(name: "APNSStandIn", maxConcurrentStreams: maxConcurrentStreams) {
            core.answer($0)
        }
        return APNSStandIn(core: core, server: server)
    }

    /// Decides each answer; the default answers `.ok`. Called (on an event loop) for requests that
    /// passed validation, after they were recorded in `requests`.
    public func respond(_ responder: @escaping @Sendable (Request) -> Answer) {
        core.state.withLockedValue { $0.responder = responder }
    }

    /// Every request that passed validation and was handed to the responder, in arrival order.
    public var requests: [Request] { core.state.withLockedValue { $0.requests } }
    /// Every request that failed validation, one entry each: method, path, status, reason, and why;
    /// and every connection that did not negotiate h2.
    public var violations: [String] { server.violations }
    /// Distinct provider JWTs seen (valid or not), in first-seen order.
    public var providerTokens: [String] { core.state.withLockedValue { $0.providerTokens } }
    /// TCP connections accepted so far (a well-behaved client reuses one).
    public var connectionsAccepted: Int { server.connectionsAccepted }

    /// Polls until `requests.count >= count`; throws when `timeout` passes first.
    public func waitForRequests(count: Int, timeout: Duration) async throws -> [Request] {
        do {
            return try await waitForValue("\(count) accepted request(s)", within: timeout) {
                let current = requests
                return current.count >= count ? current : nil
            }
        } catch {
            let violations = self.violations
            throw Failure(
                description: "APNSStandIn: waited \(timeout) for \(count) accepted request(s), got \(requests.count)"
                    + (violations.isEmpty ? "" : "; violations: \(violations)")
            )
        }
    }

    /// Stops listening and closes every open connection. Safe to call more than once.
    public func shutdown() async throws {
        try await server.shutdown()
    }
}

// MARK: - Validation

extension APNSStandIn {
    fileprivate struct State {
        var responder: @Sendable (Request) -> Answer = { _ in .ok }
        var requests: [Request] = []
        var providerTokens: [String] = []
        var seenProviderTokens: Set<String> = []
        var verifiedProviderTokens: Set<String> = []
    }

    fileprivate struct Problem {
        var status: Int
        var reason: String
        var detail: String
    }

    fileprivate final class Core: Sendable {
        let teamID: String
        let keyID: String
        let publicKey: P256.Signing.PublicKey
        let topic: String
        let state = NIOLockedValueBox(State())

        init(teamID: String, keyID: String, publicKey: P256.Signing.PublicKey, topic: String) {
            self.teamID = teamID
            self.keyID = keyID
            self.publicKey = publicKey
            self.topic = topic
        }

        /// Answers one complete request: refused as Apple would (and described in the violation)
        /// when it fails validation, else recorded and handed to the responder.
        func answer(_ request: HTTP2StandInServer.Request) -> HTTP2StandInServer.Response {
            let apnsID = request.headers["apns-id"] ?? UUID().uuidString.lowercased()
            let (answer, violation) = evaluate(request)
            var response = Self.response(for: answer, apnsID: apnsID)
            response.violation = violation
            return response
        }

        /// `.ok` is 200 with `apns-id` and no body; a refusal carries `{"reason": ...}`.
        private static func response(for answer: Answer, apnsID: String) -> HTTP2StandInServer.Response {
            switch answer {
            case .ok:
                return HTTP2StandInServer.Response(status: 200, headers: [("apns-id", apnsID)])
            case .refuse(let status, let reason, let retryAfter):
                var headers: [(name: String, value: String)] = [("apns-id", apnsID), ("content-type", "application/json")]
                if let retryAfter { headers.append(("retry-after", "\(retryAfter)")) }
                var json: [String: Any] = ["reason": reason]
                if status == 410 { json["timestamp"] = Int(Date().timeIntervalSince1970 * 1000) }
                let data = (try? JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])) ?? Data()
                return HTTP2StandInServer.Response(status: status, headers: headers, body: data)
            case .delayed(let milliseconds, let inner):
                var response = response(for: inner, apnsID: apnsID)
                response.delay = (response.delay ?? 0) + milliseconds
                return response
            }
        }

        /// Validates one complete request; records it and asks the responder when it passes.
        private func evaluate(_ request: HTTP2StandInServer.Request) -> (Answer, violation: String?) {
            let headers = request.headers
            let method = request.method
            let path = request.path
            let bodyData = request.body
            let receivedAt = request.receivedAt
            var problems: [Problem] = []

            // The path.
            let prefix = "/3/device/"
            var deviceToken = ""
            if method != "POST" {
                problems.append(Problem(status: 405, reason: "MethodNotAllowed", detail: "method is \(method), not POST"))
            }
            if path.hasPrefix(prefix) {
                deviceToken = String(path.dropFirst(prefix.count))
                let isHex = deviceToken.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) }
                if !(64...200).contains(deviceToken.utf8.count) || !isHex {
                    problems.append(
                        Problem(
                            status: 400,
                            reason: "BadDeviceToken",
                            detail: "device token '\(deviceToken)' is not 64 to 200 hex characters"
                        )
                    )
                }
            } else {
                problems.append(Problem(status: 404, reason: "BadPath", detail: "path is not /3/device/<token>"))
            }

            // The provider token.
            let now = Date()
            var providerToken = ""
            if let authorization = headers["authorization"] {
                let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
                if parts.count == 2, parts[0].lowercased() == "bearer" {
                    providerToken = String(parts[1]).trimmingCharacters(in: .whitespaces)
                    state.withLockedValue { state in
                        if state.seenProviderTokens.insert(providerToken).inserted {
                            state.providerTokens.append(providerToken)
                        }
                    }
                    if let problem = checkProviderToken(providerToken, now: now) { problems.append(problem) }
                } else {
                    problems.append(
                        Problem(
                            status: 403,
                            reason: "MissingProviderToken",
                            detail: "authorization header is not 'bearer <jwt>'"
                        )
                    )
                }
            } else {
                problems.append(Problem(status: 403, reason: "MissingProviderToken", detail: "no authorization header"))
            }

            // The apns-* headers.
            if headers["apns-push-type"] != "alert" {
                problems.append(
                    Problem(
                        status: 400,
                        reason: "InvalidPushType",
                        detail: "apns-push-type is \(describe(headers["apns-push-type"])), expected 'alert'"
                    )
                )
            }
            if headers["apns-priority"] != "10" {
                problems.append(
                    Problem(
                        status: 400,
                        reason: "BadPriority",
                        detail: "apns-priority is \(describe(headers["apns-priority"])), expected '10'"
                    )
                )
            }
            switch headers["apns-topic"] {
            case nil:
                problems.append(Problem(status: 400, reason: "MissingTopic", detail: "no apns-topic header"))
            case let value? where value != topic:
                problems.append(
                    Problem(status: 400, reason: "BadTopic", detail: "apns-topic is '\(value)', expected '\(topic)'")
                )
            default:
                break
            }
            let earliest = now.timeIntervalSince1970 + 23 * 3600
            let latest = now.timeIntervalSince1970 + 25 * 3600
            if let value = headers["apns-expiration"], let expiration = Int(value) {
                if Double(expiration) < earliest || Double(expiration) > latest {
                    problems.append(
                        Problem(
                            status: 400,
                            reason: "BadExpirationDate",
                            detail: "apns-expiration \(expiration) is \(expiration - Int(now.timeIntervalSince1970)) s from now, "
                                + "expected between 23 h and 25 h"
                        )
                    )
                }
            } else {
                problems.append(
                    Problem(
                        status: 400,
                        reason: "BadExpirationDate",
                        detail: "apns-expiration is \(describe(headers["apns-expiration"])), expected a UNIX time in seconds"
                    )
                )
            }

            // The payload.
            if bodyData.isEmpty {
                problems.append(Problem(status: 400, reason: "PayloadEmpty", detail: "the body is empty"))
            } else if bodyData.count > 4096 {
                problems.append(
                    Problem(status: 413, reason: "PayloadTooLarge", detail: "the body is \(bodyData.count) bytes, over 4096")
                )
            } else if let object = (try? JSONSerialization.jsonObject(with: bodyData)) as? [String: Any] {
                if !(object["aps"] is [String: Any]) {
                    problems.append(
                        Problem(status: 400, reason: "PayloadEmpty", detail: "the JSON body has no 'aps' dictionary")
                    )
                }
            } else {
                problems.append(Problem(status: 400, reason: "PayloadEmpty", detail: "the body is not a JSON object"))
            }

            if let first = problems.first {
                let described = problems.map { "\($0.status) \($0.reason): \($0.detail)" }.joined(separator: "; also ")
                return (.refuse(status: first.status, reason: first.reason), "\(method) \(path): \(described)")
            }

            let accepted = Request(
                deviceToken: deviceToken,
                headers: headers,
                body: bodyData,
                providerToken: providerToken,
                receivedAt: receivedAt
            )
            let responder = state.withLockedValue { state in
                state.requests.append(accepted)
                return state.responder
            }
            return (responder(accepted), nil)
        }

        private func describe(_ value: String?) -> String {
            value.map { "'\($0)'" } ?? "missing"
        }

        /// ES256 JWS: header `{"alg":"ES256","kid":keyID}`, claims `{"iss":teamID,"iat":<seconds>}`.
        private func checkProviderToken(_ token: String, now: Date) -> Problem? {
            func invalid(_ detail: String) -> Problem {
                Problem(status: 403, reason: "InvalidProviderToken", detail: detail)
            }
            let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3 else { return invalid("the JWT has \(parts.count) parts, not 3") }
            guard let headerData = Self.base64URLDecode(parts[0]),
                let header = (try? JSONSerialization.jsonObject(with: headerData)) as? [String: Any]
            else { return invalid("the JWT header is not base64url JSON") }
            guard header["alg"] as? String == "ES256" else {
                return invalid("the JWT header alg is \(header["alg"].map { "\($0)" } ?? "missing"), not ES256")
            }
            guard header["kid"] as? String == keyID else {
                return invalid("the JWT header kid is \(header["kid"].map { "\($0)" } ?? "missing"), not \(keyID)")
            }
            if let typ = header["typ"], typ as? String != "JWT" {
                return invalid("the JWT header typ is \(typ), not JWT")
            }
            guard let claimsData = Self.base64URLDecode(parts[1]) else {
                return invalid("the JWT claims are not base64url")
            }
            struct Claims: Decodable {
                var iss: String?
                var iat: Double?
            }
            guard let claims = try? JSONDecoder().decode(Claims.self, from: claimsData) else {
                return invalid("the JWT claims are not JSON with a string iss and a numeric iat")
            }
            guard claims.iss == teamID else {
                return invalid("the JWT iss is \(claims.iss ?? "missing"), not the team \(teamID)")
            }
            guard let signature = Self.base64URLDecode(parts[2]) else {
                return invalid("the JWT signature is not base64url")
            }
            // A verified token is remembered: ECDSA verification is slow in debug builds.
            if !state.withLockedValue({ $0.verifiedProviderTokens.contains(token) }) {
                guard signature.count == 64,
                    let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature)
                else {
                    return invalid("the JWT signature is \(signature.count) bytes, not a raw 64-byte r||s")
                }
                guard publicKey.isValidSignature(ecdsa, for: Data("\(parts[0]).\(parts[1])".utf8)) else {
                    return invalid("the JWT signature does not verify with the team's public key")
                }
                _ = state.withLockedValue { $0.verifiedProviderTokens.insert(token) }
            }
            guard let iat = claims.iat else { return invalid("the JWT has no iat") }
            guard iat.rounded() == iat else {
                return invalid("the JWT iat \(iat) is not an integer number of seconds")
            }
            let age = now.timeIntervalSince1970 - iat
            if age > 3600 {
                return Problem(
                    status: 403,
                    reason: "ExpiredProviderToken",
                    detail: "the JWT iat is \(Int(age)) s old, over 3600"
                )
            }
            if age < -60 {
                return invalid("the JWT iat is \(Int(-age)) s in the future, over 60")
            }
            return nil
        }

        private static func base64URLDecode(_ text: String) -> Data? {
            var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            if base64.contains("=") { return nil }  // JWS forbids padding
            base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
            return Data(base64Encoded: base64)
        }
    }
}
