import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS
import TestSupport

/// The plumbing a local stand-in for one of Apple's HTTP/2 services needs: TLS with ALPN "h2"
/// only, the HTTP/2 pipeline, one handler call per complete stream, and bookkeeping.
///
/// A stand-in (APNs, Sign in with Apple) supplies only the protocol: a `Handler` that turns each
/// complete `Request` into a `Response`. The handler runs on an event loop, so it answers at once;
/// a `Response` with a `delay` is written that much later without holding the loop.
///
/// The server certificate is self-signed (EC prime256v1, SAN `DNS:localhost,IP:127.0.0.1`,
/// `CA:TRUE`), made once per process with `/usr/bin/openssl`; clients trust it through `caFile`.
/// The `endpoint` is `https://127.0.0.1:<port>`: async-http-client verifies the IP SAN.
///
/// A client that does not negotiate "h2" by ALPN is recorded in `violations` and disconnected,
/// as Apple's services accept nothing else.
public final class HTTP2StandInServer: Sendable {
    /// One complete HTTP/2 request (HEADERS and DATA up to END_STREAM).
    public struct Request: Sendable {
        public var method: String
        public var path: String
        /// Lower-cased names, pseudo-headers left out; repeated headers joined with ", ".
        public var headers: [String: String]
        public var body: Data
        public var receivedAt: Date

        public init(method: String, path: String, headers: [String: String], body: Data, receivedAt: Date) {
            self.method = method
            self.path = path
            self.headers = headers
            self.body = body
            self.receivedAt = receivedAt
        }
    }

    /// The answer to one stream.
    public struct Response: Sendable {
        public var status: Int
        /// Sent in this order after `:status`.
        public var headers: [(name: String, value: String)]
        /// Empty: the HEADERS frame ends the stream and no DATA frame is sent.
        public var body: Data
        /// Milliseconds to wait before writing the answer.
        public var delay: Int?
        /// Recorded in `violations` before the answer is written, so a handler's validation
        /// failures interleave with the connection's in one list, in the order they happened.
        public var violation: String?

        public init(
            status: Int,
            headers: [(name: String, value: String)] = [],
            body: Data = Data(),
            delay: Int? = nil,
            violation: String? = nil
        ) {
            self.status = status
            self.headers = headers
            self.body = body
            self.delay = delay
            self.violation = violation
        }
    }

    public typealias Handler = @Sendable (Request) -> Response

    public struct Failure: Error, CustomStringConvertible {
        public var description: String

        public init(description: String) {
            self.description = description
        }
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

    /// Listens on 127.0.0.1 at a free port.
    /// - Parameters:
    ///   - name: prefixes error messages, so a failing test names the stand-in.
    ///   - maxConcurrentStreams: the HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS advertised.
    ///   - handler: answers each complete request, on an event loop.
    public static func start(
        name: String = "HTTP2StandInServer",
        maxConcurrentStreams: Int = 100,
        handler: @escaping Handler
    ) async throws -> HTTP2StandInServer {
        let certificate: Certificate
        do {
            certificate = try await Self.certificate.value
        } catch {
            throw Failure(description: "\(name): \(error)")
        }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificate.certificateFile).map { .certificate($0) },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: certificate.keyFile, format: .pem))
        )
        tls.applicationProtocols = ["h2"]
        let sslContext = try NIOSSLContext(configuration: tls)

        let core = Core(handler: handler, maxConcurrentStreams: maxConcurrentStreams)
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
            throw Failure(description: "\(name): the server channel has no local port")
        }
        return HTTP2StandInServer(
            endpoint: "https://127.0.0.1:\(port)",
            caFile: certificate.certificateFile,
            port: port,
            core: core,
            serverChannel: channel
        )
    }

    /// Every violation so far, in the order they happened: the connection's (no "h2") and those
    /// handlers returned in `Response.violation` or recorded with `recordViolation(_:)`.
    public var violations: [String] { core.state.withLockedValue { $0.violations } }
    /// TCP connections accepted so far (a well-behaved client reuses one).
    public var connectionsAccepted: Int { core.state.withLockedValue { $0.connectionsAccepted } }
    /// TCP connections open now.
    public var openConnections: Int { core.state.withLockedValue { $0.connections.count } }

    /// Adds to `violations`.
    public func recordViolation(_ violation: String) {
        core.state.withLockedValue { $0.violations.append(violation) }
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

    private static let certificate = Task<Certificate, any Error> { try await makeCertificate() }

    private static func makeCertificate() async throws -> Certificate {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("http2-standin-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let certificateFile = directory.appendingPathComponent("cert.pem").path
        let keyFile = directory.appendingPathComponent("key.pem").path
        let (status, output) = try await Spawn.run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", keyFile, "-out", certificateFile, "-days", "2", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                "-addext", "basicConstraints=critical,CA:TRUE",
                "-addext", "extendedKeyUsage=serverAuth",
            ]
        )
        guard status == 0 else {
            throw Failure(description: "openssl exited \(status): \(output)")
        }
        return Certificate(certificateFile: certificateFile, keyFile: keyFile)
    }
}

// MARK: - Connections and streams

extension HTTP2StandInServer {
    fileprivate struct State {
        var violations: [String] = []
        var connections: [ObjectIdentifier: any Channel] = [:]
        var connectionsAccepted = 0
        var isShutDown = false
    }

    fileprivate final class Core: Sendable {
        let handler: Handler
        let maxConcurrentStreams: Int
        let state = NIOLockedValueBox(State())

        init(handler: @escaping Handler, maxConcurrentStreams: Int) {
            self.handler = handler
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

        /// Turns the frames into a `Request`, asks the handler, and records its violation.
        func answer(head: HPACKHeaders, body: ByteBuffer, receivedAt: Date) -> Response {
            var headers: [String: String] = [:]
            for (name, value, _) in head {
                let name = name.lowercased()
                if name.hasPrefix(":") { continue }
                headers[name] = headers[name].map { "\($0), \(value)" } ?? value
            }
            let request = Request(
                method: head.first(name: ":method") ?? "",
                path: head.first(name: ":path") ?? "",
                headers: headers,
                body: Data(body.readableBytesView),
                receivedAt: receivedAt
            )
            let response = handler(request)
            if let violation = response.violation {
                state.withLockedValue { $0.violations.append(violation) }
            }
            return response
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
            let response = core.answer(head: head ?? [:], body: body, receivedAt: Date())
            if let delay = response.delay, delay > 0 {
                context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(delay))) {
                    self.send(response, context: context)
                }
            } else {
                send(response, context: context)
            }
        }

        private func send(_ response: Response, context: ChannelHandlerContext) {
            guard isActive else { return }
            var headers: HPACKHeaders = [":status": "\(response.status)"]
            for (name, value) in response.headers { headers.add(name: name, value: value) }
            if response.body.isEmpty {
                context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: headers, endStream: true))), promise: nil)
                return
            }
            context.write(wrapOutboundOut(.headers(.init(headers: headers, endStream: false))), promise: nil)
            let buffer = context.channel.allocator.buffer(bytes: response.body)
            context.writeAndFlush(wrapOutboundOut(.data(.init(data: .byteBuffer(buffer), endStream: true))), promise: nil)
        }
    }
}
