package import DiaryCore
import ServiceLifecycle

/// On SIGTERM, closes every realtime socket with 1001 before the HTTP server stops (which
/// would close them with 1000). It must come after the application in the service group,
/// whose members stop in reverse order.
package struct RealtimeDrain: Service {
    let feed: ChangeFeed

    package init(feed: ChangeFeed) {
        self.feed = feed
    }

    package func run() async throws {
        try? await gracefulShutdown()
        await feed.closeAllSockets(within: .seconds(5))
    }
}
