package import Foundation
package import Logging
import NIOConcurrencyHelpers
package import PostgresClient

/// One per server: learns that a diary's change log has grown and wakes the sockets of its
/// members, naming the diary. LISTEN brings the wake-up and the position; the poll reads the
/// diaries' positions, so a lost notification only delays until then. A diary's new changes
/// are read once, by one member, and handed to every member's socket (`fanOut`); what cannot
/// be shared so, sockets read under their own policies (`ChangeLogRepository`), from their
/// own cursors. Both on the requests' pool.
///
/// It also closes sockets whose session ends (logout, account deletion, revocation), and
/// prunes the log past its retention.
package final class ChangeFeed: Sendable {
    package struct Options: Sendable {
        package var maxSocketsPerUser = 10
        /// The fallback should a notification be lost: each poll reads the position of every
        /// diary followed.
        package var pollInterval: Duration = .seconds(1)
        /// Who follows which diaries is read anew this often besides when the listener may
        /// have missed a notification: a backstop, each being a read of every shard on Citus.
        package var membershipInterval: Duration = .seconds(60)
        /// A session's end reaches its sockets by NOTIFY (sessions_ended); should that be lost,
        /// they close within this (plus one query).
        package var sessionCheckInterval: Duration = .seconds(2)
        package var pruneInterval: Duration = .seconds(3600)
        package var retention: Duration = .seconds(30 * 24 * 3600)
        /// The most changes of one diary read once for all its sockets (`fanOut`); more go to
        /// each socket's own read.
        package var fanOutPage = 100
        /// Deliveries a socket may have waiting; past them it reads those diaries itself.
        package var maxPendingDeliveries = 64
        package init() {}
    }

    package let options: Options
    /// The feed's connections say so in pg_stat_activity.
    package static let applicationName = "diary-server realtime"
    /// The feed's own connections, for who follows what, the poll, session checks and
    /// pruning; run it as a service beside the feed.
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
        /// Who follows which diaries, and where each stands, as the rounds learnt it.
        var following = Following()
        /// What NOTIFYs named since the last round began.
        var named = Named()
        /// An unnamed NOTIFY, one the listener may have missed, a failed round, or the
        /// backstop: the next round reads who follows what, and every position.
        var everythingDue = true
        /// Changes handed to sockets by `fanOut`, since the feed began.
        var fannedOutChanges = 0
        /// Reads that sockets since closed ran for themselves.
        var endedSocketsReads = 0
    }

    package init(pool: PostgresPool, listenConfiguration: PostgresConfiguration, options: Options = Options(), logger: Logger) {
        self.pool = pool
        self.listenConfiguration = listenConfiguration
        self.options = options
        self.logger = logger
    }

    package var subscriptionCount: Int { state.withLockedValue { $0.subscriptions.count } }

    /// Changes handed to sockets read once for all of them (`fanOut`).
    package var fannedOutChanges: Int { state.withLockedValue { $0.fannedOutChanges } }

    /// Reads of the change log that sockets ran for themselves (`ChangeSubscription.countOwnRead`).
    package var socketReads: Int {
        let (ended, open) = state.withLockedValue { ($0.endedSocketsReads, Array($0.subscriptions.values)) }
        return ended + open.reduce(0) { $0 + $1.ownReads }
    }

    /// A new socket's subscription, or nil if the user already holds the most allowed.
    /// `reader` reads the change log as a given identity, on the requests' pool: a socket's
    /// own reads, and, for a diary it is in, the one read the feed shares with its members.
    /// One that `startsFromFeed` is handed where it begins (`Arrival.start`) by the next
    /// round, which asks for it: its user's diaries at their positions, read once for every
    /// socket that opened meanwhile, not by each.
    package func subscribe(
        _ identity: TokenService.Identity, reader: ChangeSubscription.Reader? = nil, startsFromFeed: Bool = false
    ) -> ChangeSubscription? {
        let subscription: ChangeSubscription? = state.withLockedValue { state in
            let ids = state.byUser[identity.userID, default: []]
            guard ids.count < options.maxSocketsPerUser else { return nil }
            state.nextID += 1
            let subscription = ChangeSubscription(
                id: state.nextID, identity: identity, reader: reader, startsFromFeed: startsFromFeed,
                maxPendingDeliveries: options.maxPendingDeliveries)
            state.subscriptions[subscription.id] = subscription
            state.byUser[identity.userID, default: []].insert(subscription.id)
            return subscription
        }
        if startsFromFeed, subscription != nil { positionRequests.wake() }
        return subscription
    }

    /// Ends a subscription (its socket has closed, or never opened) and frees its user's place:
    /// subscriptions begin and end here alone. Idempotent.
    package func unsubscribe(_ subscription: ChangeSubscription) {
        subscription.cancel()
        let reads = subscription.ownReads
        state.withLockedValue { state in
            guard state.subscriptions.removeValue(forKey: subscription.id) != nil else { return }
            state.endedSocketsReads += reads
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
                { await self.followChanges() },
                { await self.listenForChanges() },
                { await repeating(every: self.options.pollInterval) { await self.pollPositions() } },
                { await repeating(every: self.options.membershipInterval) { self.askForEverything() } },
                { await repeating(every: self.options.sessionCheckInterval) { await self.closeEndedSessions() } },
                { await repeating(every: self.options.pruneInterval) { await self.prune() } },
            ],
            finishing: positionRequests)
    }


    /// Ends the subscriptions of a session that ended.
    func endSockets(ofSession session: UUID) {
        let ended = state.withLockedValue { $0.subscriptions.values.filter { $0.sessionID == session } }
        for subscription in ended { subscription.end(.sessionEnded) }
        if !ended.isEmpty { logger.debug("realtime: a session ended", metadata: ["session": "\(session)", "sockets": "\(ended.count)"]) }
    }

    func closeEndedSessions() async {
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

/// One socket's link to the feed: wake-ups naming the diaries to read, deliveries of
/// changes read once for every member (`fanOut`), and whether its session has ended. The
/// feed calls it, and the socket reads what it is handed; it calls neither.
package final class ChangeSubscription: Sendable {
    /// Reads the change log as an identity.
    package typealias Reader = @Sendable (TokenService.Identity) -> ChangeLogRepository

    let id: Int
    package let userID: UUID
    let reader: Reader?
    private let maxPendingDeliveries: Int
    private let current: NIOLockedValueBox<State>

    private struct State {
        var identity: TokenService.Identity
        /// Handed its start (`begin`), or never to be.
        var started: Bool
        var ending: Ending?
        var arrived = Arrival()
        var onEnd: [@Sendable () -> Void] = []
        var onArrival: (@Sendable () -> Void)?
        /// Reads of the change log its socket ran for itself (`ChangeFeed.socketReads`).
        var ownReads = 0
    }

    /// What the socket has to write since it last looked: where it begins, once, if it starts
    /// from the feed; diaries to read itself, and changes read for it, in the order they came.
    package struct Arrival: Sendable {
        package var start: ChangeCursor?
        package var diaries: Set<UUID> = []
        package var deliveries: [Delivery] = []
    }

    /// What arrived since the last call, which it takes: for a socket told by `onArrival`.
    package func takeArrival() -> Arrival {
        current.withLockedValue { state in defer { state.arrived = Arrival() }; return state.arrived }
    }

    /// Calls `observer` each time something arrives or the subscription must end, after it is
    /// recorded (at once if something waits): a socket that runs no task while it is idle
    /// starts one then. One observer; a second replaces the first.
    package func onArrival(_ observer: @escaping @Sendable () -> Void) {
        current.withLockedValue { $0.onArrival = observer }
        observer()
    }

    private func announce() {
        current.withLockedValue { $0.onArrival }?()
    }

    init(id: Int, identity: TokenService.Identity, reader: Reader?, startsFromFeed: Bool, maxPendingDeliveries: Int) {
        self.id = id
        self.userID = identity.userID
        self.reader = reader
        self.maxPendingDeliveries = maxPendingDeliveries
        self.current = NIOLockedValueBox(State(identity: identity, started: !startsFromFeed))
    }

    /// Still waits for the feed to say where it begins.
    var awaitsStart: Bool { current.withLockedValue { !$0.started } }

    /// Where the socket begins: what arrived before is at or behind `cursor`, and goes.
    func begin(_ cursor: ChangeCursor) {
        let begun = current.withLockedValue { state in
            guard !state.started else { return false }
            state.started = true
            state.arrived = Arrival(start: cursor)
            return true
        }
        if begun { announce() }
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

    func wake(_ diaries: Set<UUID>) {
        current.withLockedValue { $0.arrived.diaries.formUnion(diaries) }
        announce()
    }

    /// A socket that does not keep up reads the diaries itself once it does: what waits for it stays bounded.
    func deliver(_ delivery: Delivery) {
        current.withLockedValue { state in
            if state.arrived.deliveries.count < maxPendingDeliveries {
                state.arrived.deliveries.append(delivery)
            } else {
                state.arrived.diaries.formUnion(state.arrived.deliveries.map(\.diary) + [delivery.diary])
                state.arrived.deliveries = []
            }
        }
        announce()
    }

    func end(_ ending: Ending) {
        let observers = current.withLockedValue { state -> [@Sendable () -> Void] in
            guard state.ending == nil else { return [] }
            state.ending = ending
            defer { state.onEnd = [] }
            return state.onEnd
        }
        announce()
        for observer in observers { observer() }
    }

    /// Calls `observer` once the subscription must end (at once if it must already): what a
    /// socket waits on besides its wake-ups, since its delivery may be stuck in a write.
    package func onEnd(_ observer: @escaping @Sendable () -> Void) {
        let ended = current.withLockedValue { state in
            if state.ending == nil { state.onEnd.append(observer) }
            return state.ending != nil
        }
        if ended { observer() }
    }

    /// The socket reads the change log itself: counted, since the feed's deliveries are to
    /// spare it that.
    package func countOwnRead() {
        current.withLockedValue { $0.ownReads += 1 }
    }

    var ownReads: Int { current.withLockedValue { $0.ownReads } }

    /// Drops the observers (a socket's hold the socket, which holds this): `ChangeFeed.unsubscribe`.
    func cancel() {
        current.withLockedValue { state in
            state.onArrival = nil
            state.onEnd = []
        }
    }
}
