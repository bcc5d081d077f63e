import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresClient

/// How the feed learns what its sockets have left to read. Each diary orders its own changes
/// (migration 0027), so there is no one tail to follow: the feed keeps the position of each
/// diary of the users it holds sockets for, and each user's diaries, and wakes every socket
/// that has not read up to them. A NOTIFY names the diary that changed, so a round reads
/// just those; a poll, a NOTIFY without a name, and the first round read them all.
extension ChangeFeed {
    /// What the rounds have read: the position of each diary of the users with sockets
    /// here, and each such user's diaries.
    struct Positions: Sendable {
        var ofDiary: [UUID: Int64] = [:]
        var diariesOfUser: [UUID: Set<UUID>] = [:]
        /// The users read; one who subscribed since is read in the next round.
        var users: Set<UUID> = []

        /// Whether a socket of `user` that has read up to `seen` has more to read: a diary of
        /// theirs moved past it, or their diaries are not the ones it read (a join elsewhere,
        /// a departure it has yet to tell). A user not read yet waits for the next round.
        func hasMore(than seen: ChangeSubscription.Seen, user: UUID) -> Bool {
            guard users.contains(user) else { return false }
            let diaries = diariesOfUser[user] ?? []
            return diaries != seen.diaries || diaries.contains { (seen.positions[$0] ?? -1) < (ofDiary[$0] ?? -1) }
        }
    }

    /// The diaries NOTIFYs named since the last round, and those whose members changed.
    struct Named: Sendable {
        var diaries: Set<UUID> = []
        var membersChanged: Set<UUID> = []

        /// `<diary>`, or `members <diary>`, as `log_change` announces them (sql/definitions/50_realtime.sql;
        /// AnnouncementTests holds the two to each other); false for anything else.
        mutating func note(_ payload: String) -> Bool {
            let members = payload.hasPrefix("members ")
            guard let diary = UUID(uuidString: String(payload.dropFirst(members ? 8 : 0))) else { return false }
            diaries.insert(diary)
            if members { membersChanged.insert(diary) }
            return true
        }
    }

    var latest: Positions? { state.withLockedValue { $0.latest } }

    func askForEverything() {
        state.withLockedValue { $0.everythingDue = true }
        positionRequests.wake()
    }

    /// Every NOTIFY on diary_changes wakes a round, with the diary it names noted; the
    /// listener reconnects by itself, and the poll covers what it misses meanwhile.
    func listenForChanges() async {
        for await notification in PostgresListener.notifications(
            configuration: listenConfiguration, channels: [Announcement.diaryChanges.channel], logger: logger
        ) {
            state.withLockedValue { state in
                if !state.named.note(notification.payload) { state.everythingDue = true }
            }
            positionRequests.wake()
        }
    }

    /// After each wake-up: the positions, then a wake for each socket that has not read up
    /// to them. What a socket has read is what it last recorded (`ChangeSubscription.record`);
    /// one that records after a round read more is woken then, so a change that commits
    /// between a socket's read and its record waits for no round.
    func followPositions() async {
        for await _ in positionRequests.rounds {
            let (users, named, everything, latest) = state.withLockedValue { state in
                defer { state.named = Named(); state.everythingDue = false }
                return (Array(state.byUser.keys), state.named, state.everythingDue, state.latest)
            }
            do {
                let positions = if let latest, !everything {
                    try await update(latest, users: users, named: named)
                } else {
                    try await readPositions(of: users)
                }
                let subscriptions = state.withLockedValue { state in
                    state.latest = positions
                    return Array(state.subscriptions.values)
                }
                for subscription in subscriptions where subscription.hasMore(in: positions) { subscription.wake() }
            } catch {
                state.withLockedValue { $0.everythingDue = true }
                logger.warning("realtime: reading the diaries' positions failed", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Every diary of `users`, and its position.
    private func readPositions(of users: [UUID]) async throws -> Positions {
        var positions = Positions(users: Set(users))
        try await addDiaries(of: users, to: &positions)
        try await readPositions(of: Set(positions.diariesOfUser.values.joined()), into: &positions)
        return positions
    }

    /// `latest` with the diaries of users new since, the members of the diaries named as
    /// having new ones, and the positions of the diaries named or new.
    private func update(_ latest: Positions, users: [UUID], named: Named) async throws -> Positions {
        var positions = latest
        let newUsers = users.filter { !positions.users.contains($0) }
        var unread = named.diaries
        if !newUsers.isEmpty {
            let known = Set(positions.ofDiary.keys)
            try await addDiaries(of: newUsers, to: &positions)
            positions.users.formUnion(newUsers)
            unread.formUnion(Set(newUsers.flatMap { positions.diariesOfUser[$0] ?? [] }).subtracting(known))
        }
        if !named.membersChanged.isEmpty {
            var members: [UUID: Set<UUID>] = [:]
            for batch in Array(positions.users).inBatches() {
                for row in try await pool.query("select diary_id, user_ids from members_of_diaries(\(Array(named.membersChanged)), \(batch))") {
                    members[try row.decode("diary_id"), default: []].formUnion(try row.decodeAggregate("user_ids", as: UUID.self))
                }
            }
            for user in positions.users {
                for diary in named.membersChanged {
                    if members[diary]?.contains(user) == true {
                        positions.diariesOfUser[user, default: []].insert(diary)
                    } else {
                        positions.diariesOfUser[user]?.remove(diary)
                    }
                }
            }
        }
        let followed = Set(positions.diariesOfUser.values.joined())
        try await readPositions(of: unread.intersection(followed), into: &positions)
        return positions
    }

    private func addDiaries(of users: [UUID], to positions: inout Positions) async throws {
        for batch in users.inBatches() {
            for row in try await pool.query("select diary_id, user_ids from diaries_of_users(\(batch))") {
                let diary: UUID = try row.decode("diary_id")
                for user in try row.decodeAggregate("user_ids", as: UUID.self) { positions.diariesOfUser[user, default: []].insert(diary) }
            }
        }
    }

    private func readPositions(of diaries: Set<UUID>, into positions: inout Positions) async throws {
        for batch in Array(diaries).inBatches() {
            for row in try await pool.query("select diary_id, change_position from change_positions(\(batch))") {
                positions.ofDiary[try row.decode("diary_id")] = try row.decode("change_position", as: Int64.self)
            }
        }
    }
}
