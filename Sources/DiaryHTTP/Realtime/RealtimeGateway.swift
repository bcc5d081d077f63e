import DiaryCore
import Foundation
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import PostgresClient

/// Decides each WebSocket upgrade: only `GET /v1/realtime`, only with a valid access token
/// of a live session (the `Authorization` header, or `access_token` for clients that cannot
/// set headers; never logged), and at most `ChangeFeed.Options.maxSocketsPerUser` sockets
/// per user on this server. A refusal is a problem+json response, and no socket opens.
struct RealtimeGateway: Sendable {
    static let path = "/v1/realtime"

    let feed: ChangeFeed
    let callers: Callers
    let options: RealtimeSocket.Options

    func shouldUpgrade(
        _ head: HTTPRequest, channel: any Channel, logger: Logger
    ) async throws -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        let uri = URI(head.path ?? "/")
        guard head.method == .get, uri.path == Self.path else {
            return try await refuse(Problem.notFound("WebSocket upgrades are served at \(Self.path) only"), channel: channel)
        }
        let query = uri.queryParameters
        var token = query.get("access_token").map { String($0) }
        if let header = head.headerFields[.authorization], let bearer = Callers.token(fromAuthorization: header) {
            token = bearer
        }
        guard let token else {
            return try await refuse(Problem.unauthorized("an access token is required"), channel: channel)
        }
        let identity: TokenService.Identity
        do {
            identity = try await callers.identity(fromToken: token)
        } catch {
            return try await refuse(error, channel: channel)
        }
        // As a request's transaction answers a session that ended (ZN401, `Refusal.unauthorized`).
        guard try await isLive(identity) else {
            return try await refuse(Problem.unauthorized("the session has ended; sign in again"), channel: channel)
        }
        let reader: ChangeSubscription.Reader = { [callers] identity in ChangeLogRepository(scope: callers.scope(for: identity)) }
        let since = query.get("since").map { String($0) }
        guard let subscription = feed.subscribe(identity, reader: reader, startsFromFeed: since.flatMap(ChangeCursor.init) == nil) else {
            AppMetrics.recordRateLimitRejection("realtime_sockets")
            return try await refuse(
                Problem(.rateLimited, detail: "at most \(feed.options.maxSocketsPerUser) realtime sockets per user", headers: [.retryAfter: "5"]),
                channel: channel
            )
        }
        // Frees the place even if the upgrade fails after this point.
        channel.closeFuture.whenComplete { [feed] _ in feed.unsubscribe(subscription) }
        // A fixed kernel buffer: loopback and LAN autotuning grow it to megabytes per socket,
        // which a reader that stalls would fill before it is noticed.
        try await channel.setOption(ChannelOptions.socketOption(.so_sndbuf), value: RealtimeSocket.Options.kernelSendBuffer).get()
        let socket = RealtimeSocket(
            feed: feed, subscription: subscription, reader: reader, since: since, tokens: callers.tokens, channel: channel, options: options
        )
        return .upgrade([:]) { inbound, outbound, context in
            await socket.run(inbound: inbound, outbound: outbound, logger: context.logger)
        }
    }

    private func isLive(_ identity: TokenService.Identity) async throws -> Bool {
        !(try await callers.pool.query("select live_sessions(\([identity.sessionID])) as id")).isEmpty
    }

    private func refuse(
        _ problem: Problem, channel: any Channel
    ) async throws -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> {
        let response = try problem.http1Response()
        try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.handler(type: UpgradeRefusalHandler.self).refuse(with: response)
        }.get()
        return .dontUpgrade
    }
}
