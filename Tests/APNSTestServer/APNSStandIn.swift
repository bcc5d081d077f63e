import Crypto
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// A local stand-in for Apple's Push Notification service, speaking its real protocol: HTTP/2 over
/// TLS (ALPN "h2" only), many concurrent streams on one connection, `POST /3/device/<token>`.
///
/// Every request is validated as APNs does (path, provider JWT signed with ES256, the `apns-*`
/// headers, the payload). A request that fails is described in `violations` and answered as Apple
/// would, without asking the responder; a request that passes is recorded in `requests` and then
/// answered by the responder (`.ok` unless told otherwise with `respond(_:)`).
///
/// The server certificate is self-signed (EC prime256v1, SAN `DNS:localhost,IP:127.0.0.1`), made
/// once per process with `/usr/bin/openssl`; clients trust it through `caFile`. The `endpoint` is
/// `https://127.0.0.1:<port>`: async-http-client verifies the IP SAN (checked by the self-test).
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
    private let serverChannel: any Channel

    private init(endpoint: String, caFile: String, port: Int, core: Core, serverChannel: any Channel) {
        self.endpoint = endpoint
        self.caFile = caFile
        self.port = port
        self.core = core
        self.serverChannel = serverChannel
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
        let certificate = try Self.certificate.get()
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificate.certificateFile).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: certificate.keyFile, format: .pem))
        )
        tls.applicationProtocols = ["h2"]
        let sslContext = try NIOSSLContext(configuration: tls)

        let core = Core(
            teamID: teamID,
            keyID: keyID,
            publicKey: publicKey,
            topic: topic,
            maxConcurrentStreams: maxConcurrentStreams
        )
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                core.initialize(connection: channel, sslContext: sslContext)
            }
            .bind(host: "127.0.0.1", port: 0)
            .get()
        guard let port = channel.localAddress?.port else {
            try? await channel.close()
            throw Failure(description: "APNSStandIn: the server channel has no local port")
        }
        return APNSStandIn(
            endpoint: "https://127.0.0.1:\(port)",
            caFile: certificate.certificateFile,
            port: port,
            core: core,
            serverChannel: channel
        )
    }

    /// Decides each answer; the default answers `.ok`. Called (on an event loop) for requests that
    /// passed validation, after they were recorded in `requests`.
    public func respond(_ responder: @escaping @Sendable (Request) -> Answer) {
        core.state.withLockedValue { $0.responder = responder }
    }

    /// Every request that passed validation and was handed to the responder, in arrival order.
    public var requests: [Request] { core.state.withLockedValue { $0.requests } }
    /// Every request that failed validation, one entry each: method, path, status, reason, and why.
    public var violations: [String] { core.state.withLockedValue { $0.violations } }
    /// Distinct provider JWTs seen (valid or not), in first-seen order.
    public var providerTokens: [String] { core.state.withLockedValue { $0.providerTokens } }
    /// TCP connections accepted so far (a well-behaved client reuses one).
    public var connectionsAccepted: Int { core.state.withLockedValue { $0.connectionsAccepted } }

    /// Polls until `requests.count >= count`; throws when `timeout` passes first.
    public func waitForRequests(count: Int, timeout: Duration) async throws -> [Request] {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: timeout)
        while true {
            let (current, violations) = core.state.withLockedValue { ($0.requests, $0.violations) }
            if current.count >= count { return current }
            if clock.now >= deadline {
                throw Failure(
                    description: "APNSStandIn: waited \(timeout) for \(count) accepted request(s), got \(current.count)"
                        + (violations.isEmpty ? "" : "; violations: \(violations)")
                )
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Stops listening and closes every open connection. Safe to call more than once.
    public func shutdown() async throws {
        let connections = core.state.withLockedValue { state in
            state.isShutDown = true
            return Array(state.connections.values)
        }
        do {
            try await serverChannel.close()
        } catch ChannelError.alreadyClosed {}
        for connection in connections {
            try? await connection.close()
        }
    }

    // MARK: - The certificate, made once per process

    private struct Certificate: Sendable {
        var certificateFile: String
        var keyFile: String
    }

    private static let certificate: Result<Certificate, any Error> = Result { try makeCertificate() }

    private static func makeCertificate() throws -> Certificate {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("apns-standin-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificateFile = directory.appendingPathComponent("cert.pem").path
        let keyFile = directory.appendingPathComponent("key.pem").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = [
            "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-keyout", keyFile, "-out", certificateFile, "-days", "2", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "extendedKeyUsage=serverAuth",
        ]
        let errors = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(
                description: "APNSStandIn: openssl exited \(process.terminationStatus): "
                    + String(decoding: message, as: UTF8.self)
            )
        }
        return Certificate(certificateFile: certificateFile, keyFile: keyFile)
    }
}

// MARK: - Server state and validation

extension APNSStandIn {
    fileprivate struct State {
        var responder: @Sendable (Request) -> Answer = { _ in .ok }
        var requests: [Request] = []
        var violations: [String] = []
        var providerTokens: [String] = []
        var seenProviderTokens: Set<String> = []
        var verifiedProviderTokens: Set<String> = []
        var connections: [ObjectIdentifier: any Channel] = [:]
        var connectionsAccepted = 0
        var isShutDown = false
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
        let maxConcurrentStreams: Int
        let state = NIOLockedValueBox(State())

        init(teamID: String, keyID: String, publicKey: P256.Signing.PublicKey, topic: String, maxConcurrentStreams: Int) {
            self.teamID = teamID
            self.keyID = keyID
            self.publicKey = publicKey
            self.topic = topic
            self.maxConcurrentStreams = maxConcurrentStreams
        }

        func initialize(connection channel: any Channel, sslContext: NIOSSLContext) -> EventLoopFuture<Void> {
            let id = ObjectIdentifier(channel)
            let isShutDown = state.withLockedValue { state in
                state.connectionsAccepted += 1
                if !state.isShutDown { state.connections[id] = channel }
                return state.isShutDown
            }
            if isShutDown { return channel.close() }
            channel.closeFuture.whenComplete { [self] _ in
                _ = state.withLockedValue { $0.connections.removeValue(forKey: id) }
            }
            let maxConcurrentStreams = self.maxConcurrentStreams
            return channel.eventLoop.makeCompletedFuture {
                let pipeline = channel.pipeline.syncOperations
                try pipeline.addHandler(NIOSSLServerHandler(context: sslContext))
                try pipeline.addHandler(
                    ApplicationProtocolNegotiationHandler { [self] result, channel in
                        guard case .negotiated("h2") = result else {
                            state.withLockedValue {
                                $0.violations.append("connection: the client did not negotiate h2 by ALPN (\(result))")
                            }
                            return channel.close()
                        }
                        return channel.eventLoop.makeCompletedFuture {
                            var connection = NIOHTTP2Handler.ConnectionConfiguration()
                            connection.initialSettings = [
                                HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams),
                                HTTP2Setting(parameter: .maxHeaderListSize, value: HPACKDecoder.defaultMaxHeaderListSize),
                            ]
                            _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                                mode: .server,
                                connectionConfiguration: connection,
                                streamConfiguration: .init()
                            ) { [self] stream in
                                stream.eventLoop.makeCompletedFuture {
                                    try stream.pipeline.syncOperations.addHandler(StreamHandler(core: self))
                                }
                            }
                        }
                    }
                )
            }
        }

        /// Validates one complete request; records it and asks the responder when it passes.
        func evaluate(head: HPACKHeaders, body: ByteBuffer, receivedAt: Date) -> Answer {
            var headers: [String: String] = [:]
            for (name, value, _) in head {
                let name = name.lowercased()
                if name.hasPrefix(":") { continue }
                headers[name] = headers[name].map { "\($0), \(value)" } ?? value
            }
            let method = head.first(name: ":method") ?? ""
            let path = head.first(name: ":path") ?? ""
            let bodyData = Data(body.readableBytesView)
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
                state.withLockedValue { $0.violations.append("\(method) \(path): \(described)") }
                return .refuse(status: first.status, reason: first.reason)
            }

            let request = Request(
                deviceToken: deviceToken,
                headers: headers,
                body: bodyData,
                providerToken: providerToken,
                receivedAt: receivedAt
            )
            let responder = state.withLockedValue { state in
                state.requests.append(request)
                return state.responder
            }
            return responder(request)
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

    /// One HTTP/2 stream: gathers HEADERS and DATA until END_STREAM, then answers.
    fileprivate final class StreamHandler: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame.FramePayload
        typealias OutboundOut = HTTP2Frame.FramePayload

        private let core: Core
        private var head: HPACKHeaders?
        private var body = ByteBuffer()
        private var finished = false
        private var isActive = true

        init(core: Core) {
            self.core = core
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .headers(let headers):
                if head == nil { head = headers.headers }  // later HEADERS are trailers: ignored
                if headers.endStream { finish(context: context) }
            case .data(let frame):
                if case .byteBuffer(var buffer) = frame.data { body.writeBuffer(&buffer) }
                if frame.endStream { finish(context: context) }
            default:
                break
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            isActive = false
            context.fireChannelInactive()
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            isActive = false
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            context.close(promise: nil)
        }

        private func finish(context: ChannelHandlerContext) {
            guard !finished else { return }
            finished = true
            let head = self.head ?? [:]
            let answer = core.evaluate(head: head, body: body, receivedAt: Date())
            send(answer, apnsID: head.first(name: "apns-id") ?? UUID().uuidString.lowercased(), context: context)
        }

        private func send(_ answer: Answer, apnsID: String, context: ChannelHandlerContext) {
            guard isActive else { return }
            switch answer {
            case .delayed(let milliseconds, let inner):
                context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(milliseconds))) {
                    self.send(inner, apnsID: apnsID, context: context)
                }
            case .ok:
                let headers: HPACKHeaders = [":status": "200", "apns-id": apnsID]
                context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: headers, endStream: true))), promise: nil)
            case .refuse(let status, let reason, let retryAfter):
                var headers: HPACKHeaders = [
                    ":status": "\(status)", "apns-id": apnsID, "content-type": "application/json",
                ]
                if let retryAfter { headers.add(name: "retry-after", value: "\(retryAfter)") }
                var json: [String: Any] = ["reason": reason]
                if status == 410 { json["timestamp"] = Int(Date().timeIntervalSince1970 * 1000) }
                let data = (try? JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])) ?? Data()
                context.write(wrapOutboundOut(.headers(.init(headers: headers, endStream: false))), promise: nil)
                let buffer = context.channel.allocator.buffer(bytes: data)
                context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(buffer), endStream: true))), promise: nil)
            }
        }
    }
}
