public import AsyncHTTPClient
public import Foundation
public import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOSSL

/// Sends notifications to APNs over HTTP/2: one multiplexed connection per host (Apple's
/// two, or `APNSConfiguration.endpoint`), `POST /3/device/<token>`, token-based auth.
public final class APNSClient: Sendable {
    public let configuration: APNSConfiguration
    private let http: HTTPClient
    /// Whether `shutdown()` shuts `http` down: not when it is the process's shared client.
    private let ownsHTTP: Bool
    private let providerToken: APNSProviderToken
    private let logger: Logger

    /// With a client of its own. Shut it down before letting it go: its HTTP client must be.
    public convenience init(configuration: APNSConfiguration, logger: Logger) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let file = configuration.extraTrustedCAFile {
            tls.additionalTrustRoots = [.file(file)]
        }
        var http = HTTPClient.Configuration(tlsConfiguration: tls)
        http.httpVersion = .automatic
        http.timeout = .init(connect: .seconds(5), read: TimeAmount(configuration.requestTimeout))
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
        do {
            try self.init(configuration: configuration, http: client, ownsHTTP: true, logger: logger)
        } catch {
            try? client.syncShutdown()
            throw error
        }
    }

    /// Over a shared client, which must trust `extraTrustedCAFile` if one is set; its owner shuts it down.
    public convenience init(configuration: APNSConfiguration, http: HTTPClient, logger: Logger) throws {
        try self.init(configuration: configuration, http: http, ownsHTTP: false, logger: logger)
    }

    private init(configuration: APNSConfiguration, http: HTTPClient, ownsHTTP: Bool, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        self.http = http
        self.ownsHTTP = ownsHTTP
        providerToken = try APNSProviderToken(
            privateKeyPEM: configuration.privateKeyPEM, keyID: configuration.keyID, teamID: configuration.teamID,
            lifetime: configuration.providerTokenLifetime)
    }

    /// Sends one notification. A refused provider token (403 ExpiredProviderToken or
    /// InvalidProviderToken) is signed anew and the request sent once more.
    public func send(_ notification: APNSNotification) async -> APNSResult {
        do {
            let token = try await providerToken.token()
            let first = await send(notification, providerToken: token)
            guard case .refused(403, let reason, _) = first, Self.providerTokenReasons.contains(reason) else { return first }
            logger.notice("APNs refused the provider token; signing a new one", metadata: ["reason": "\(reason)"])
            return await send(notification, providerToken: try await providerToken.renew(replacing: token))
        } catch {
            return .failed("cannot sign the provider token: \(error)")
        }
    }

    static let providerTokenReasons: Set<String> = ["ExpiredProviderToken", "InvalidProviderToken"]

    private func send(_ notification: APNSNotification, providerToken: String) async -> APNSResult {
        let url = configuration.base(for: notification.environment).appendingPathComponent("3/device/\(notification.deviceToken)")
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        request.headers.add(name: "authorization", value: "bearer \(providerToken)")
        request.headers.add(name: "apns-push-type", value: "alert")
        request.headers.add(name: "apns-priority", value: "10")
        request.headers.add(name: "apns-topic", value: configuration.topic)
        request.headers.add(name: "apns-expiration", value: String(Int(notification.expiration.timeIntervalSince1970)))
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: notification.payload))
        do {
            let response = try await http.execute(request, timeout: TimeAmount(configuration.requestTimeout))
            let body = try await response.body.collect(upTo: 64 * 1024)
            if response.status == .ok { return .delivered }
            let reason = (try? JSONDecoder().decode(Refusal.self, from: body))?.reason ?? "HTTP \(response.status.code)"
            let retryAfter = response.headers.first(name: "retry-after").flatMap(Int.init).map { Duration.seconds($0) }
            return .refused(status: Int(response.status.code), reason: reason, retryAfter: retryAfter)
        } catch {
            return .failed("\(error)")
        }
    }

    private struct Refusal: Decodable {
        var reason: String
    }

    public func shutdown() async throws {
        if ownsHTTP { try await http.shutdown() }
    }
}

/// One notification for one device.
public struct APNSNotification: Sendable {
    public var deviceToken: String
    public var environment: APNSEnvironment
    /// The JSON payload, as sent.
    public var payload: [UInt8]
    /// `apns-expiration`: Apple keeps trying an offline device until then.
    public var expiration: Date

    public init(deviceToken: String, environment: APNSEnvironment, payload: [UInt8], expiration: Date) {
        self.deviceToken = deviceToken
        self.environment = environment
        self.payload = payload
        self.expiration = expiration
    }
}

/// What became of one request.
public enum APNSResult: Sendable, Equatable {
    case delivered
    /// Apple answered with an error: its status, its `reason`, and any `Retry-After`.
    case refused(status: Int, reason: String, retryAfter: Duration?)
    /// No answer: connection refused or lost, TLS, timeout.
    case failed(String)
}
