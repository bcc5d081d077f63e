import Foundation
package import Logging
import NIOConcurrencyHelpers
package import PostgresClient

/// One per server: learns that the change log has grown and wakes the sockets it may
/// concern. LISTEN brings the wake-up; the log's tail brings the facts, so a lost
/// notification only delays until the next poll. Sockets then read their own changes,
/// under their own policies (`ChangeLogRepository`), from their own cursors.
///
/// It also closes sockets whose session ends (logout, account deletion, revocation), and
/// prunes the log past its retention.
package final class ChangeFeed: Sendable {
    package struct Options: Sendable {
        package var maxSocketsPerUser = 10
        /// The fallback when notifications are lost, and the wait for changes held back by
        /// a transaction that logs nothing.
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
    private let listenConfiguration: PostgresConfiguration
    private let logger: Logger
    private let state = NIOLockedValueBox(State())
    /// Requests to read the log's tail: NOTIFY, the poll.
    private let tailRequests = Wakeups()

    private struct State {
        var subscriptions: [Int: ChangeSubscription] = [:]
        var byUser: [UUID: Set<Int>] = [:]
        var nextID = 0
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

    private func wakeEverySubscription() {
        for subscription in state.withLockedValue({ Array($0.subscriptions.values) }) { subscription.wake() }
    }

    private func wake(users: Set<UUID>) {
        let woken = state.withLockedValue { state in
            users.flatMap { state.byUser[$0] ?? [] }.compactMap { state.subscriptions[$0] }
        }
        for subscription in woken { subscription.wake() }
    }

    /// Runs until cancelled: listening, polling, checking sessions, pruning. The first round
    /// runs at once, to take the log's position before sockets can fall behind it.
    package func run() async {
        tailRequests.wake()
        await runWorkerLoops(
            [{ await self.followTail() }]
                + tailRequests.wakers(channel: Announcement.diaryChanges.channel, listen: listenConfiguration, polling: options.pollInterval, logger: logger)
                + [
                    { await repeating(every: self.options.sessionCheckInterval) { await self.closeEndedSessions() } },
                    { await repeating(every: self.options.pruneInterval) { await self.prune() } },
                ],
            finishing: tailRequests)
    }

    /// Reads the log's tail after each wake-up and wakes whom it concerns.
    private func followTail() async {
        var cursor: ChangeCursor?
        for await _ in tailRequests.rounds {
            do {
                if cursor == nil {
                    let rows = try await pool.query(ChangeLogRepository.positionStatement)
                    cursor = try ChangeLogRepository.position(from: rows)
                    // A socket that opened before this read its own cursor earlier: what
                    // committed in between is behind the feed, and would never wake it.
                    wakeEverySubscription()
                }
                while let after = cursor {
                    let batch = 1000
                    let rows = try await pool.query(
                        "select xact::text, seq, users, horizon::text from change_log_tail(\(String(after.xact))::xid8, \(after.seq), \(batch)::integer)")
                    var users = Set<UUID>()
                    var last: ChangeCursor?
                    var horizon: UInt64?
                    for row in rows {
                        horizon = UInt64(try row.decode("horizon", as: String.self))
                        guard let xact = try row.decode("xact", as: String?.self).flatMap(UInt64.init) else { continue }
                        last = ChangeCursor(xact: xact, seq: try row.decode("seq"))
                        users.formUnion(try row.decodeAggregate("users", as: UUID.self))
                    }
                    if !users.isEmpty { wake(users: users) }
                    let full = rows.count >= batch
                    cursor = full ? last : max(last ?? after, horizon.map(ChangeCursor.init(horizon:)) ?? after)
                    if !full { break }
                }
            } catch {
                logger.warning("realtime: reading the change log's tail failed", metadata: ["error": "\(error)"])
            }
        }
    }

    private func closeEndedSessions() async {
        let subscriptions = state.withLockedValue { Array($0.subscriptions.values) }
        guard !subscriptions.isEmpty else { return }
        let sessions = Array(Set(subscriptions.map(\.sessionID)))
        do {
            var live = Set<UUID>()
            for start in stride(from: 0, to: sessions.count, by: 5000) {
                let chunk = Array(sessions[start..<min(start + 5000, sessions.count)])
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
    private let current: NIOLockedValueBox<(identity: TokenService.Identity, ending: Ending?)>
    /// Wake-ups fold into one: the socket reads everything after its cursor anyway.
    private let wakeups = Wakeups()
    package var wakes: AsyncStream<Void> { wakeups.rounds }

    init(id: Int, identity: TokenService.Identity, feed: ChangeFeed) {
        self.id = id
        self.userID = identity.userID
        self.feed = feed
        self.current = NIOLockedValueBox((identity, nil))
    }

    /// Why the socket must close, once it must.
    package enum Ending: Sendable {
        /// Logout, account deletion, or revocation.
        case sessionEnded
        /// The server is stopping.
        case shutdown
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
