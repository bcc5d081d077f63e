import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import DiaryCore
@testable import DiaryHTTP

/// What an upgraded channel carries once it is a realtime socket's (`RealtimeSocket.adopt`).
@Suite("A realtime socket's channel")
struct RealtimeChannelTests {
    @Test("adopted: the upgrade's refusal handler gone, a writability handler first that runs the rules, reads no larger than a frame")
    func adopted() async throws {
        let changes = NIOLockedValueBox(0)
        // Every channel operation before the first await: an embedded loop is its thread's.
        try {
            let channel = EmbeddedChannel()
            try channel.pipeline.syncOperations.addHandler(UpgradeRefusalHandler(), position: .first)
            try RealtimeSocket.adopt(channel) { changes.withLockedValue { $0 += 1 } }
            #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: UpgradeRefusalHandler.self) }
            #expect(try channel.pipeline.syncOperations.context(handlerType: WritabilityHandler.self).handler is WritabilityHandler)
            let allocator = try #require(try channel.getOption(ChannelOptions.recvAllocator).wait() as? AdaptiveRecvByteBufferAllocator)
            #expect(allocator.initial <= 256 && allocator.maximum <= RealtimeSocket.Options.maxMessageBytes)
            #expect(changes.withLockedValue { $0 } == 0)
            channel.pipeline.fireChannelWritabilityChanged()
            #expect(changes.withLockedValue { $0 } == 1, "a change of writability runs the rules")
            _ = try channel.finish()
        }()
    }
}
