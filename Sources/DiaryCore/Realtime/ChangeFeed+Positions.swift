import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresClient

/// How the feed learns which sockets have something to read, and in which diaries. Each
/// diary orders its own changes (migration 0027). A NOTIFY names the diary that changed and
/// its new position, so a round wakes that diary's followers with no read at all; the
/// feed reads only who follows what (each new user's diaries, and a diary's members when a
/// NOTIFY says they changed). The poll reads every followed diary's position, and wakes the
/// followers of each that moved past what the feed knew; the first round, an unreadable
/// NOTIFY, one the listener may have missed, and a backstop now and then read who follows
/// what anew as well. A new socket begins where the round that first knows its user's
/// diaries says (`start`). A diary's new changes are then read once and handed to its
/// members' sockets (`fanOut`); what cannot be shared, sockets read for themselves, one
/// statement a diary (`ChangeLogRepository`): the calls go one way, feed → subscription →
/// socket.
extension ChangeFeed {
    /// What the feed knows: each followed user's diaries, and the latest position of each
    /// diary, from NOTIFYs and polls.
    struct Following: Sendable {
        var diariesOfUser: [UUID: Set<UUID>] = [:]
        var positions: [UUID: Int64] = [:]

        /// Notes a diary's position; true if it moved past what was known (or was unknown),
        /// so its followers have more to read.
        mutating func move(_ diary: UUID, to position: Int64?) -> Bool {
            guard let position else { return true }
            if let known = positions[diary], known >= position { return false }
            positions[diary] = position
            return true
        }

        /// Each of `user`'s diaries at its position.
        func cursor(of user: UUID) -> ChangeCursor {
            var cursor = ChangeCursor()
            for diary in diariesOfUser[user] ?? [] { cursor[diary] = positions[diary] }
            return cursor
        }

        /// Who follows each of `diaries`.
        func followers(of diaries: Set<UUID>) -> [UUID: Set<UUID>] {
            var woken: [UUID: Set<UUID>] = [:]
            for (user, followed) in diariesOfUser {
                let moved = followed.intersection(diaries)
                if !moved.isEmpty { woken[user] = moved }
            }
            return woken
        }
    }

    /// The diaries NOTIFYs named since the last round, the latest position each gave, and
    /// the diaries whose members changed.
    struct Named: Sendable {
        var diaries: Set<UUID> = []
        var positions: [UUID: Int64] = [:]
        var membersChanged: Set<UUID> = []

        /// A diary that changed, as its NOTIFY said (`FeedNotice.diaryChanged`).
        mutating func note(_ diary: UUID, at position: Int64?, membersChanged members: Bool) {
            note(diary, at: position)
            if members { membersChanged.insert(diary) }
        }

        /// A diary at `position` (unknown: nil), as the poll found it.
        mutating func note(_ diary: UUID, at position: Int64?) {
            diaries.insert(diary)
            if let position { positions[diary] = max(positions[diary] ?? position, position) }
        }
    }

    func askForEverything() {
        state.withLockedValue { $0.everythingDue = true }
        positionRequests.wake()
    }

    /// The poll, beside the rounds: every followed diary's position, and each that moved past
    /// what the feed knows noted as its NOTIFY would have been, which wakes a round. The read
    /// asks every shard on Citus, so no round waits for it: a NOTIFY that comes meanwhile is
    /// served at once.
    func pollPositions() async {
        let known = state.withLockedValue { $0.following }
        var polled = Following(positions: known.positions)
        let moved: Set<UUID>
        do {
            moved = try await readPositions(of: Set(known.diariesOfUser.values.joined()), into: &polled)
        } catch {
            logger.warning("realtime: the poll could not read the diaries' positions", metadata: ["error": "\(error)"])
            return
        }
        guard !moved.isEmpty else { return }
        state.withLockedValue { state in
            for diary in moved { state.named.note(diary, at: polled.positions[diary]) }
        }
        positionRequests.wake()
    }

    /// Every NOTIFY on diary_changes wakes a round, with the diary it names noted; the
    /// listener reconnects by itself, and each time it may have missed one (it listens
    /// anew, or fell behind), the next round reads everything. A NOTIFY on sessions_ended
    /// ends the sockets of the session it names, or, naming none, has every session checked.
    /// What the listener misses of those, the session check finds (`sessionCheckInterval`).
    func listenForChanges() async {
        for await notification in PostgresListener.notifications(
            configuration: listenConfiguration, channels: [Announcement.diaryChanges.channel, Announcement.sessionsEnded.channel],
            logger: logger, onMissed: { [weak self] in self?.askForEverything() }
        ) {
            switch FeedNotice(channel: notification.channel, payload: notification.payload) {
            case .sessionEnded(let session):
                endSockets(ofSession: session)
            case .everySession:
                await closeEndedSessions()
            case .diaryChanged(let diary, let position, let membersChanged):
                state.withLockedValue { $0.named.note(diary, at: position, membersChanged: membersChanged) }
                positionRequests.wake()
            case .everyDiary:
                askForEverything()
            }
        }
    }

    /// After each wake-up: who follows what, then a wake for each subscription of a user
    /// whose diaries moved or who joined or left one, naming those diaries. A NOTIFY comes
    /// after its COMMIT, so a socket woken by it reads the change; one that arrives while
    /// the socket reads folds into its next wake-up.
    func followChanges() async {
        for await _ in positionRequests.rounds {
            let (users, named, everything, following) = state.withLockedValue { state in
                defer { state.named = Named(); state.everythingDue = false }
                return (Set(state.byUser.keys), state.named, state.everythingDue, state.following)
            }
            do {
                var (next, woken, moved) = everything
                    ? try await readEverything(of: users, after: following)
                    : try await update(following, users: users, named: named)
                await fanOut(&woken, moved: moved, before: following, after: &next)
                let starting = try await socketsToBegin(learning: &next, waking: &woken)
                let subscriptions = state.withLockedValue { state in
                    state.following = next
                    return Array(state.subscriptions.values)
                }
                for subscription in subscriptions {
                    if let diaries = woken[subscription.userID] { subscription.wake(diaries) }
                }
                // After the wakes, which the start covers.
                for subscription in starting { subscription.begin(next.cursor(of: subscription.userID)) }
            } catch {
                state.withLockedValue { $0.everythingDue = true }
                logger.warning("realtime: reading the diaries' positions failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Every diary of `users` and its position; wakes each user for the diaries that moved
    /// past what the feed knew, and for those they joined or left since.
    private func readEverything(of users: Set<UUID>, after known: Following) async throws -> (Following, [UUID: Set<UUID>], moved: Set<UUID>) {
        var next = Following(diariesOfUser: try await diaries(of: users), positions: known.positions)
        let moved = try await readPositions(into: &next)
        var woken = next.followers(of: moved)
        for user in users {
            let changed = (known.diariesOfUser[user] ?? []).symmetricDifference(next.diariesOfUser[user] ?? [])
            if !changed.isEmpty { woken[user, default: []].formUnion(changed) }
        }
        return (next, woken, moved)
    }

    /// Reads every followed diary's position into `next`, forgetting those no longer
    /// followed; returns the diaries that moved past what it knew.
    private func readPositions(into next: inout Following) async throws -> Set<UUID> {
        let followed = Set(next.diariesOfUser.values.joined())
        let moved = try await readPositions(of: followed, into: &next)
        next.positions = next.positions.filter { followed.contains($0.key) }
        return moved
    }

    /// Reads the positions of `diaries` into `next`; returns those that moved past what it knew.
    private func readPositions(of diaries: Set<UUID>, into next: inout Following) async throws -> Set<UUID> {
        var moved = Set<UUID>()
        for batch in Array(diaries).inBatches() {
            for row in try await pool.query("select diary_id, change_position from change_positions(\(batch))") {
                let diary: UUID = try row.decode("diary_id")
                if next.move(diary, to: try row.decode("change_position", as: Int64.self)) { moved.insert(diary) }
            }
        }
        return moved
    }

    /// `known` with the diaries of users new since, and the members of the diaries named as
    /// having new ones; wakes the followers of the diaries named past their known position,
    /// and each user who joined or left one of them.
    private func update(_ known: Following, users: Set<UUID>, named: Named) async throws -> (Following, [UUID: Set<UUID>], moved: Set<UUID>) {
        var next = known
        next.diariesOfUser = next.diariesOfUser.filter { users.contains($0.key) }
        let newUsers = users.filter { next.diariesOfUser[$0] == nil }
        if !newUsers.isEmpty { next.diariesOfUser.merge(try await diaries(of: newUsers)) { $1 } }
        // A new user's socket may have read a diary they have left since the feed last read
        // anyone's: their diaries, just read, no longer name it, so they are woken for each
        // diary whose members changed.
        var woken: [UUID: Set<UUID>] = Dictionary(uniqueKeysWithValues: named.membersChanged.isEmpty ? [] : newUsers.map { ($0, named.membersChanged) })
        if !named.membersChanged.isEmpty {
            var members: [UUID: Set<UUID>] = [:]
            for batch in Array(users).inBatches() {
                for row in try await pool.query("select diary_id, user_ids from members_of_diaries(\(Array(named.membersChanged)), \(batch))") {
                    members[try row.decode("diary_id"), default: []].formUnion(try row.decodeAggregate("user_ids", as: UUID.self))
                }
            }
            for user in users {
                for diary in named.membersChanged {
                    let member = members[diary]?.contains(user) == true
                    let inserted = member ? next.diariesOfUser[user, default: []].insert(diary).inserted : next.diariesOfUser[user]?.remove(diary) != nil
                    if inserted { woken[user, default: []].insert(diary) }
                }
            }
        }
        let moved = named.diaries.filter { next.move($0, to: named.positions[$0]) }
        for (user, diaries) in next.followers(of: moved) { woken[user, default: []].formUnion(diaries) }
        return (next, woken, moved)
    }

    /// The sockets waiting to begin whose user's diaries the round knows: they begin at those
    /// diaries' positions, read once for all of them. A position the feed did not know is
    /// read now and kept, and the diary's followers are woken for it: one that already reads
    /// it may have read before a change whose NOTIFY, still on its way, no longer moves it.
    private func socketsToBegin(learning next: inout Following, waking woken: inout [UUID: Set<UUID>]) async throws -> [ChangeSubscription] {
        let starting = state.withLockedValue { Array($0.subscriptions.values) }.filter { [next] in
            $0.awaitsStart && next.diariesOfUser[$0.userID] != nil
        }
        let unknown = Set(starting.flatMap { next.diariesOfUser[$0.userID] ?? [] }).filter { next.positions[$0] == nil }
        let learnt = try await readPositions(of: unknown, into: &next)
        for (user, diaries) in next.followers(of: learnt) { woken[user, default: []].formUnion(diaries) }
        return starting
    }

    /// Each of `users`' diaries, none for a user in none.
    private func diaries(of users: Set<UUID>) async throws -> [UUID: Set<UUID>] {
        var diariesOfUser = Dictionary(uniqueKeysWithValues: users.map { ($0, Set<UUID>()) })
        for batch in Array(users).inBatches() {
            for row in try await pool.query("select diary_id, user_ids from diaries_of_users(\(batch))") {
                let diary: UUID = try row.decode("diary_id")
                for user in try row.decodeAggregate("user_ids", as: UUID.self) { diariesOfUser[user, default: []].insert(diary) }
            }
        }
        return diariesOfUser
    }
}
