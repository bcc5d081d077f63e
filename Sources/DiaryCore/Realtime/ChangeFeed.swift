package import Foundation
package import Logging
import NIOConcurrencyHelpers
package import PostgresClient

/// One per server: learns that a diary's change log has grown and wakes the sockets it may
/// concern. LISTEN brings the wake-up; the diaries' positions bring the facts, so a lost
/// notification only delays until the next poll. Sockets then read their own changes,
/// under their own policies (`ChangeLogRepository`), from their own cursors.
///
/// It also closes sockets whose session ends (logout, account deletion, revocation), and
/// prunes the log past its retention.
package final class ChangeFeed: Sendable {
    package struct Options: Sendable {
        package var maxSocketsPerUser = 10
        /// The fallback when notifications are lost: each poll reads the position of every
        /// diary followed.
        package var pollInterval: Duration = .seconds(1)
        /// Sockets close within this (plus one query) after their session ends.
        package var sessionCheckInterval: Duration = .seconds(2)
        package var pruneInterval: Duration = .seconds(3600)
        package var retention: Duration = .seconds(30 * 24 * 3600)
        package init() {}
    }

    package let options: Options
    /// The feed's connections say so in pg_stat_activity.
    package static let applicationName = "diary-server realtime"
    /// The feed's own connections; run it as a service beside the feed.
    package let pool: PostgresPool
    let listenConfiguration: PostgresConfiguration
    let logger: Logger
    let state = NIOLockedValueBox(State())
    /// Requests to read the diaries' positions: NOTIFY, the poll.
    let positionRequests = Wakeups()

    struct State {
        var subscriptions: [Int: ChangeSubscription] = [:]
        var byUser: [UUID: Set<Int>] = [:]
        var nextID = 0
        /// What the last round read.
        var latest: Positions?
        /// What NOTIFYs named since the last round began.
        var named = Named()
        /// A poll, an unnamed NOTIFY, or a failed round: the next round reads everything.
        var everythingDue = true
    }

    package init(pool: PostgresPool, listenConfiguration: PostgresConfiguration, options: Options = Options(), logger: Logger) {
        self.pool = pool
        self.listenConfiguration = listenConfiguration
        self.options = options
        self.logger = logger
    }

    package var subscriptionCount: Int { state.withLockedValue { $0.subscriptions.count } }

    /// A new socket's subscription, or nil if the user already holds the most allowed.
    package func subscribe(_ identity: TokenService.Identity) -> ChangeSubscription? {
        state.withLockedValue { state in
            let ids = state.byUser[identity.userID, default: []]
            guard ids.count < options.maxSocketsPerUser else { return nil }
            state.nextID += 1
            let subscription = ChangeSubscription(id: state.nextID, identity: identity, feed: self)
            state.subscriptions[subscription.id] = subscription
            state.byUser[identity.userID, default: []].insert(subscription.id)
            return subscription
        }
    }

    func unsubscribe(_ subscription: ChangeSubscription) {
        state.withLockedValue { state in
            state.subscriptions[subscription.id] = nil
            state.byUser[subscription.userID]?.remove(subscription.id)
            if state.byUser[subscription.userID]?.isEmpty == true { state.byUser[subscription.userID] = nil }
        }
    }

    /// Asks every socket to close (the server is stopping) and waits until they have, or
    /// until `limit` has passed.
    package func closeAllSockets(within limit: Duration) async {
        for subscription in state.withLockedValue({ Array($0.subscriptions.values) }) { subscription.end(.shutdown) }
        let deadline = ContinuousClock.now + limit
        while subscriptionCount > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }


    /// Runs until cancelled: listening, polling, checking sessions, pruning. The first round
    /// runs at once, for the sockets that read before it.
    package func run() async {
        positionRequests.wake()
        await runWorkerLoops(
            [
                { await self.followPositions() },
                { await self.listenForChanges() },
                { await repeating(every: self.options.pollInterval) { self.askForEverything() } },
                { await repeating(every: self.options.sessionCheckInterval) { await self.closeEndedSessions() } },
                { await repeating(every: self.options.pruneInterval) { await self.prune() } },
            ],
            finishing: positionRequests)
    }


    private func closeEndedSessions() async {
        let subscriptions = state.withLockedValue { Array($0.subscriptions.values) }
        guard !subscriptions.isEmpty else { return }
        let sessions = Array(Set(subscriptions.map(\.sessionID)))
        do {
            var live = Set<UUID>()
            for chunk in sessions.inBatches() {
                for row in try await pool.query("select live_sessions(\(chunk)) as id") {
                    live.insert(try row.decode("id"))
                }
            }
            for subscription in subscriptions where !live.contains(subscription.sessionID) {
                subscription.end(.sessionEnded)
            }
        } catch {
            logger.warning("realtime: checking sessions failed", metadata: ["error": "\(error)"])
        }
    }

    private func prune() async {
        do {
            var total = 0
            while !Task.isCancelled {
                let rows = try await pool.query(
                    "select prune_change_log(\(options.retention), 10000::integer) as removed")
                let removed = try rows.first?.decode("removed", as: Int.self) ?? 0
                total += removed
                if removed < 10000 { break }
            }
            if total > 0 { logger.info("realtime: pruned the change log", metadata: ["changes": "\(total)"]) }
        } catch {
            logger.warning("realtime: pruning the change log failed", metadata: ["error": "\(error)"])
        }
    }
}

/// One socket's link to the feed: wake-ups, and whether its session has ended.
package final class ChangeSubscription: Sendable {
    let id: Int
    let userID: UUID
    private let feed: ChangeFeed
    private let current: NIOLockedValueBox<(identity: TokenService.Identity, ending: Ending?, seen: Seen?)>
    /// Wake-ups fold into one: the socket reads everything after its cursor anyway.
    private let wakeups = Wakeups()
    package var wakes: AsyncStream<Void> { wakeups.rounds }

    init(id: Int, identity: TokenService.Identity, feed: ChangeFeed) {
        self.id = id
        self.userID = identity.userID
        self.feed = feed
        self.current = NIOLockedValueBox((identity, nil, nil))
    }

    /// Why the socket must close, once it must.
    package enum Ending: Sendable {
        /// Logout, account deletion, or revocation.
        case sessionEnded
        /// The server is stopping.
        case shutdown
    }

    /// What the socket has read: its position in each diary, and which diaries it read as
    /// the user's.
    package struct Seen: Sendable, Equatable {
        var positions: [UUID: Int64]
        var diaries: Set<UUID>
    }

    /// After each read: what the socket has read. Wakes it at once if the feed's last round
    /// read more, since no later round may come until the next change or poll.
    package func record(_ cursor: ChangeCursor, diaries: Set<UUID>) {
        current.withLockedValue { $0.seen = Seen(positions: cursor.positions, diaries: diaries) }
        if let latest = feed.latest, hasMore(in: latest) { wake() }
    }

    func hasMore(in positions: ChangeFeed.Positions) -> Bool {
        guard let seen = current.withLockedValue({ $0.seen }) else { return false }
        return positions.hasMore(than: seen, user: userID)
    }

    package var identity: TokenService.Identity { current.withLockedValue { $0.identity } }
    var sessionID: UUID { identity.sessionID }
    package var ending: Ending? { current.withLockedValue { $0.ending } }

    /// A renewed access token of the same user; its session may be another.
    package func renew(_ identity: TokenService.Identity) {
        precondition(identity.userID == userID, "a renewal is for the same user")
        current.withLockedValue { $0.identity = identity }
    }

    func wake() { wakeups.wake() }

    func end(_ ending: Ending) {
        current.withLockedValue { if $0.ending == nil { $0.ending = ending } }
        wakeups.wake()
    }

    /// Ends the wake-ups and frees the user's place. Idempotent.
    package func cancel() {
        wakeups.finish()
        feed.unsubscribe(self)
    }
}
