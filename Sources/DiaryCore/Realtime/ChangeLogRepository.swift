package import DiaryModels
package import Foundation
import PostgresClient

/// The change log as one member sees it (migrations 0008, 0027), for the realtime socket and
/// delta sync alike. Rows come under the caller's row-level policies; each change is then
/// rendered from its subject's current state, as the REST API would show it to the caller.
/// A change whose subject is gone since (an entry deleted, a member who left again) is
/// passed over: the change that removed it follows.
package struct ChangeLogRepository: Sendable {
    let scope: RequestScope

    package init(scope: RequestScope) {
        self.scope = scope
    }

    package struct Page: Sendable {
        package var events: [ChangeEvent]
        /// Resuming after it continues with the next change.
        package var next: ChangeCursor
        package var hasMore: Bool
        /// The diaries read as the caller's.
        package var diaries: Set<UUID>
    }

    package enum Outcome: Sendable {
        case page(Page)
        /// The cursor is older than the retained log, or was never issued.
        case resyncRequired
    }

    /// The diary's position now, for the caller (no row if they are not a member). Read
    /// before the diary's rows, it gives a cursor at or before what that read sees.
    static func positionStatement(ofDiary diary: UUID) -> PostgresQuery {
        "select diaries.change_position from diaries where diaries.id = \(diary) and \(DiariesPolicy.select.using)"
    }

    static func position(ofDiary diary: UUID, from rows: PostgresRows) throws -> ChangeCursor {
        var cursor = ChangeCursor()
        cursor[diary] = try rows.first?.decode("change_position", as: Int64.self)
        return cursor
    }

    /// Every diary of the caller at its position now: where a socket without `since` starts.
    /// One statement a diary, each of which routes to the diary's shard on Citus; one over
    /// all the caller's diaries would ask every shard.
    package func position() async throws -> ChangeCursor {
        let diaries = try await scope.read("select diary_id from my_positions_at_join()").map { try $0.decode("diary_id", as: UUID.self) }
        guard !diaries.isEmpty else { return ChangeCursor() }
        var cursor = ChangeCursor()
        for (diary, rows) in zip(diaries, try await scope.read(diaries.map(Self.positionStatement(ofDiary:)))) {
            cursor[diary] = try Self.position(ofDiary: diary, from: rows)[diary]
        }
        return cursor
    }

    /// Changes after `cursor` that the caller may see: in `diary` (the caller must be a
    /// member, else 404), or in every diary they belong to, and their own departures from
    /// the diaries the cursor names that they have left. Each diary is read from its own
    /// position, in one statement that on Citus routes to its shard; a page takes the
    /// oldest changes across them. A diary the cursor does not name starts where the caller
    /// joined it.
    ///
    /// The diaries the cursor names are read as the caller's in the round trip that reads
    /// the caller's diaries, which is all it takes while those stay the same; a diary joined
    /// since, or left, takes a second.
    package func changes(after cursor: ChangeCursor, inDiary diary: UUID? = nil, limit: Int) async throws -> Outcome {
        let named = cursor.positions.filter { diary == nil || $0.key == diary }.sorted { $0.key.uuidString < $1.key.uuidString }
        let first = try await scope.read(
            ["select diary_id, position_at_join from my_positions_at_join()"]
                + named.map { Self.changesStatement(inDiary: $0.key, after: $0.value, limit: limit) })
        var starts: [UUID: Int64] = [:]
        for row in first[0] {
            let member: UUID = try row.decode("diary_id")
            guard diary == nil || member == diary else { continue }
            let joined = try row.decode("position_at_join", as: Int64.self)
            starts[member] = max(cursor[member] ?? joined, joined)
        }
        if let diary, starts[diary] == nil { throw DomainError.notFound("no such diary") }

        typealias Read = (diary: UUID, after: Int64, member: Bool)
        var reads: [(read: Read, rows: PostgresRows)] = []
        var second: [Read] = []
        for (index, (named, after)) in named.enumerated() {
            if let start = starts[named] {
                if start == after { reads.append(((named, after, true), first[index + 1])) } else { second.append((named, start, true)) }
            } else if diary == nil {
                second.append((named, after, false))
            }
        }
        for (member, start) in starts where cursor[member] == nil { second.append((member, start, true)) }
        if !second.isEmpty {
            let results = try await scope.read(second.map {
                $0.member ? Self.changesStatement(inDiary: $0.diary, after: $0.after, limit: limit)
                    : Self.departureStatement(fromDiary: $0.diary, after: $0.after, limit: limit)
            })
            reads += zip(second, results).map { ($0, $1) }
        }

        var next = diary == nil ? ChangeCursor() : cursor
        var queues: [[LoggedChange]] = []
        for (read, rows) in reads {
            if read.member {
                // No row: the caller left since reading their diaries; the next read finds the departure.
                guard let first = rows.first else { next[read.diary] = read.after; continue }
                if try read.after > first.decode("change_position", as: Int64.self)
                    || read.after < first.decode("pruned_position", as: Int64.self) {
                    return .resyncRequired
                }
                next[read.diary] = read.after
            } else if !rows.isEmpty {
                // A diary left is dropped from the cursor once its departure has been told.
                next[read.diary] = read.after
            }
            queues.append(try rows.compactMap { try LoggedChange(row: $0, diary: read.diary) })
        }

        // The oldest first across diaries, each diary's own order kept.
        var changes: [LoggedChange] = []
        var heads = Array(repeating: 0, count: queues.count)
        while changes.count < limit {
            var oldest: Int?
            for (index, queue) in queues.enumerated() where heads[index] < queue.count {
                if let best = oldest, queues[best][heads[best]].at <= queue[heads[index]].at { continue }
                oldest = index
            }
            guard let taken = oldest else { break }
            var change = queues[taken][heads[taken]]
            heads[taken] += 1
            next[change.diaryID] = change.position
            change.cursor = next
            changes.append(change)
        }
        let hasMore = queues.indices.contains { heads[$0] < queues[$0].count }
        return .page(Page(events: try await render(changes), next: next, hasMore: hasMore, diaries: Set(starts.keys)))
    }

    /// A diary's changes after `after`, one row beyond `limit`; the first row carries the
    /// diary's position and pruning line even when no change is returned. Nothing for a
    /// caller who is not a member.
    static func changesStatement(inDiary diary: UUID, after: Int64, limit: Int) -> PostgresQuery {
        """
        select diaries.change_position, diaries.pruned_position,
            c.position, c.kind, c.entry_id, c.user_id, c.at,
            case when c.user_id = app_user_id() then c.user_id
                 when diaries.type <> 'anonymous' then c.user_id
                 else c.user_alias end as public_user_id
        from diaries
        left join lateral (
            select c.* from change_log c
            where c.diary_id = \(diary) and c.position > \(after)
            order by c.position limit \(limit + 1)) c on true
        where diaries.id = \(diary) and \(DiariesPolicy.select.using)
        order by c.position
        """
    }

    /// The caller's own departure from a diary they have left, if not told yet.
    static func departureStatement(fromDiary diary: UUID, after: Int64, limit: Int) -> PostgresQuery {
        """
        select c.position, c.kind, c.entry_id, c.user_id, c.at, c.user_id as public_user_id
        from change_log c
        where c.diary_id = \(diary) and c.position > \(after) and c.kind = 'member.left' and c.user_id = app_user_id()
        order by c.position limit \(limit + 1)
        """
    }

    /// A row of the log, as read for the caller. `userID` is the real id and stays here:
    /// what leaves is `publicUserID`, the alias wherever the caller may not see the id.
    struct LoggedChange: Sendable {
        var diaryID: UUID
        var position: Int64
        /// Resuming after this change: the event's id.
        var cursor = ChangeCursor()
        var type: ChangeType
        var entryID: UUID?
        var userID: UUID?
        var publicUserID: UUID?
        var at: Date

        /// Nil for the row that carries only the diary's position.
        init?(row: PostgresRow, diary: UUID) throws {
            guard let position = try row.decode("position", as: Int64?.self) else { return nil }
            guard let type = ChangeType(rawValue: try row.decode("kind")) else {
                throw PostgresDecodingError(column: "kind", targetType: "ChangeType", failure: .malformed("unknown change"))
            }
            diaryID = diary
            self.position = position
            self.type = type
            entryID = try row.decode("entry_id")
            userID = try row.decode("user_id")
            publicUserID = try row.decode("public_user_id")
            at = try row.decode("at")
        }
    }

    /// Reads the subjects that changes show in full (entries, members, diaries) in one
    /// transaction, then builds the events in log order.
    func render(_ changes: [LoggedChange]) async throws -> [ChangeEvent] {
        var entryIDs: [UUID: [UUID]] = [:]
        var memberIDs: [UUID: [UUID]] = [:]
        var diaryIDs: [UUID] = []
        for change in changes {
            switch change.type {
            case .entryCreated, .entryUpdated: if let id = change.entryID { entryIDs[change.diaryID, default: []].append(id) }
            case .memberJoined: if let id = change.userID { memberIDs[change.diaryID, default: []].append(id) }
            case .diaryUpdated: diaryIDs.append(change.diaryID)
            case .entryDeleted, .entryRead, .memberLeft: break
            }
        }
        var statements: [PostgresQuery] = []
        let entryDiaries = Array(entryIDs.keys)
        for diary in entryDiaries {
            statements.append("""
                \(EntryRepository.entryColumns(inDiary: diary))
                where \(EntriesPolicy.select(inDiary: diary)) and entries.id = any(\(entryIDs[diary] ?? []))
                """)
        }
        let memberDiaries = Array(memberIDs.keys)
        for diary in memberDiaries {
            statements.append("""
                select p.user_id, \(DiaryRepository.memberColumns) from member_profiles p
                where p.diary_id = \(diary) and p.user_id = any(\(memberIDs[diary] ?? []))
                """)
        }
        if !diaryIDs.isEmpty {
            statements.append("\(DiaryRepository.diaryColumns) where diaries.id = any(\(diaryIDs)) and \(DiariesPolicy.select.using)")
        }
        let results = statements.isEmpty ? [] : try await scope.read(statements)

        var entries: [UUID: Entry] = [:]
        var members: [UUID: [UUID: Member]] = [:]
        var diaries: [UUID: Diary] = [:]
        var index = 0
        for _ in entryDiaries {
            for row in results[index] {
                let entry = try EntryRepository.entry(from: row, links: scope.photoLinks)
                entries[entry.id] = entry
            }
            index += 1
        }
        for diary in memberDiaries {
            for row in results[index] {
                members[diary, default: [:]][try row.decode("user_id", as: UUID.self)] = try DiaryRepository.member(from: row)
            }
            index += 1
        }
        if !diaryIDs.isEmpty {
            for row in results[index] {
                let diary = try DiaryRepository.diary(from: row)
                diaries[diary.id] = diary
            }
        }

        return changes.compactMap { change -> ChangeEvent? in
            let data: ChangeData
            switch change.type {
            case .entryCreated, .entryUpdated:
                guard let id = change.entryID, let entry = entries[id] else { return nil }
                data = .entry(entry)
            case .entryDeleted:
                guard let id = change.entryID else { return nil }
                data = .entryDeleted(DeletedEntry(id: id))
            case .entryRead:
                guard let id = change.entryID, let reader = change.publicUserID else { return nil }
                data = .entryRead(EntryRead(entryId: id, userId: reader, readAt: change.at))
            case .memberJoined:
                guard let id = change.userID, let member = members[change.diaryID]?[id] else { return nil }
                data = .member(member)
            case .memberLeft:
                guard let departed = change.publicUserID else { return nil }
                data = .memberLeft(DepartedMember(userId: departed))
            case .diaryUpdated:
                guard let diary = diaries[change.diaryID] else { return nil }
                data = .diary(diary)
            }
            return ChangeEvent(id: change.cursor.encoded, type: change.type, diaryId: change.diaryID, at: change.at, data: data)
        }
    }
}
