import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import PostgresClient
import Testing

@testable import DiaryCore
@testable import DiaryHTTP

/// What an upgraded channel carries once it is a realtime socket's (`RealtimeSocket.adopt`).
@Suite("A realtime socket's channel")
struct RealtimeChannelTests {
    @Test("adopted: the upgrade's refusal handler gone, a handler first that runs the rules on a change of writability and tells of each read, reads no larger than a frame")
    func adopted() async throws {
        let changes = NIOLockedValueBox(0), reads = NIOLockedValueBox(0)
        // Every channel operation before the first await: an embedded loop is its thread's.
        try {
            let channel = EmbeddedChannel()
            try channel.pipeline.syncOperations.addHandler(UpgradeRefusalHandler(), position: .first)
            try RealtimeSocket.adopt(channel, onWritabilityChange: { changes.withLockedValue { $0 += 1 } }, onRead: { reads.withLockedValue { $0 += 1 } })
            #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: UpgradeRefusalHandler.self) }
            #expect(try channel.pipeline.syncOperations.context(handlerType: ChannelEventsHandler.self).handler is ChannelEventsHandler)
            let allocator = try #require(try channel.getOption(ChannelOptions.recvAllocator).wait() as? AdaptiveRecvByteBufferAllocator)
            #expect(allocator.initial <= 256 && allocator.maximum <= RealtimeSocket.Options.maxMessageBytes)
            #expect(changes.withLockedValue { $0 } == 0)
            channel.pipeline.fireChannelWritabilityChanged()
            #expect(changes.withLockedValue { $0 } == 1, "a change of writability runs the rules")
            #expect(reads.withLockedValue { $0 } == 0)
            try channel.writeInbound(ByteBuffer(string: "pong"))
            #expect(reads.withLockedValue { $0 } == 1, "a read tells the ping rule the peer is there")
            #expect(try channel.readInbound(as: ByteBuffer.self) == ByteBuffer(string: "pong"), "and goes on down the pipeline")
            _ = try channel.finish()
        }()
    }

    @Test("a cancelled subscription calls none of its observers, and holds none: a socket's hold the socket, which holds the subscription")
    func cancelledSubscriptionDropsItsObservers() async throws {
        let pool = PostgresPool(configuration: PostgresConfiguration(host: "127.0.0.1", port: 1, user: "nobody", database: "none"), options: .init(size: 1), logger: Logger(label: "test"))
        let feed = ChangeFeed(pool: pool, listenConfiguration: pool.configuration, logger: Logger(label: "test"))
        let subscription = try #require(feed.subscribe(TokenService.Identity(userID: UUID(), sessionID: UUID())))
        let calls = NIOLockedValueBox(0)
        final class Holder: Sendable {}
        weak var held: Holder?
        do {
            let holder = Holder()
            held = holder
            subscription.onEnd { _ = holder; calls.withLockedValue { $0 += 1 } }
            subscription.onArrival { _ = holder; calls.withLockedValue { $0 += 1 } }
        }
        #expect(calls.withLockedValue { $0 } == 1, "onArrival calls its observer at once")
        feed.unsubscribe(subscription)
        #expect(held == nil, "the observers are released")
        subscription.end(.shutdown)
        #expect(calls.withLockedValue { $0 } == 1)
        #expect(feed.subscriptionCount == 0)
        try await pool.close()
    }
}
