package import DiaryModels
package import Foundation
import PostgresClient

/// One diary's changes read once for all its members: what the feed fans out (`ChangeFeed`
/// `+FanOut`). A member reads them through `changesStatement`, as their own socket would, so
/// what every member is sent is what delta sync shows them; the batch is only taken when
/// that member's view is every member's but for `isMine`, which each viewer's frame sets.
extension ChangeLogRepository {
    /// The changes after `after` through `through` (every change in that range, or passed
    /// over because its subject is gone since), who was a member throughout, and which of the
    /// followers' sessions were live when the changes had been read.
    package struct DiaryBatch: Sendable {
        package var diary: UUID
        package var after: Int64
        package var through: Int64
        package var members: Set<UUID>
        package var liveSessions: Set<UUID>
        package var changes: [Change]

        package struct Change: Sendable {
            package var position: Int64
            /// As the reader saw it, its `id` empty: each socket writes its own cursor there.
            package var event: ChangeEvent
        }
    }

    /// Why a diary's changes go to each member's own read instead.
    package enum BatchRefusal: Error, Equatable {
        /// An anonymous diary: each member sees the others by alias, so no view is shared.
        case anonymous
        /// The reader is no member, joined after `after`, or `after` is outside the log.
        case notFromHere
        /// A join, a departure or the diary's own change: who sees what, or how, changes within.
        case membershipOrDiaryChanged
        /// More than a page: the members catch up by their own reads.
        case tooMany
    }

    /// The diary's changes after `after`, up to `limit`, as the caller sees them, with the
    /// members among `users` and which of `sessions` are live, in one snapshot and one round
    /// trip: a revocation committed before any change the batch holds is seen, so no revoked
    /// session is handed a change written after it ended.
    package func batch(of diary: UUID, after: Int64, limit: Int, among users: [UUID], sessions: [UUID]) async throws -> Result<DiaryBatch, BatchRefusal> {
        let results = try await scope.readInOneSnapshot([
            "select user_ids from members_of_diaries(\([diary]), \(users))",
            Self.changesStatement(inDiary: diary, after: after, limit: limit, subjects: .entries, on: scope.database),
            "select live_sessions(\(sessions)) as id",
        ])
        guard let head = results[1].first, let type = try head.decode("diary_type", as: String?.self) else { return .failure(.notFromHere) }
        guard type != DiaryType.anonymous.rawValue else { return .failure(.anonymous) }
        // Read before a join reached every node (`isBehindItsMembers`): each reads it itself.
        guard try !Self.isBehindItsMembers(results[1]) else { return .failure(.membershipOrDiaryChanged) }
        guard try head.decode("read_after", as: Int64.self) == after, try head.decode("pruned_position", as: Int64.self) <= after
        else { return .failure(.notFromHere) }
        let members = Set(try results[0].first?.decodeAggregate("user_ids", as: UUID.self) ?? [])
        let live = Set(try results[2].map { try $0.decode("id", as: UUID.self) })
        var batch = DiaryBatch(diary: diary, after: after, through: after, members: members, liveSessions: live, changes: [])
        var rows = 0
        for row in results[1] {
            guard let change = try LoggedChange(row: row, diary: diary, subjects: .entries, links: scope.photoLinks, invites: scope.inviteLinks) else { continue }
            rows += 1
            guard rows <= limit else { return .failure(.tooMany) }
            switch change.type {
            case .memberJoined, .memberLeft, .diaryUpdated: return .failure(.membershipOrDiaryChanged)
            case .entryCreated, .entryUpdated, .entryDeleted, .entryRead: break
            }
            batch.through = change.position
            if let data = change.data {
                batch.changes.append(DiaryBatch.Change(
                    position: change.position, event: ChangeEvent(id: "", type: change.type, diaryId: diary, at: change.at, data: data)))
            }
        }
        return .success(batch)
    }
}

extension ChangeEvent {
    /// The event as `viewer` sees it, from a member's view of a diary that is not anonymous:
    /// the same in everything but whether an entry is the viewer's own.
    package func seen(by viewer: UUID) -> ChangeEvent {
        guard case .entry(var entry) = data else { return self }
        entry.isMine = entry.author.id == viewer
        var seen = self
        seen.data = .entry(entry)
        return seen
    }
}
