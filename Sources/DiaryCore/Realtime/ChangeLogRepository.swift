package import DiaryModels
package import Foundation
import PostgresClient

/// The change log as one member sees it (migrations 0008, 0027), for the realtime socket and
/// delta sync alike. Rows come under the caller's row-level policies, each change with its
/// subject's current state as the REST API would show it to the caller, read in the same
/// statement: one a diary (`changesStatement`). A change whose subject is gone since (an
/// entry deleted, a member who left again) is passed over: the change that removed it follows.
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
        var cursor = ChangeCursor()
        for (diary, rows) in try await scope.readEachDiary(Self.positionStatement(ofDiary:)) {
            cursor[diary] = try Self.position(ofDiary: diary, from: rows)[diary]
        }
        return cursor
    }

    /// Changes after `cursor` that the caller may see: in `diary` (the caller must be a
    /// member, else 404), or in every diary they belong to, and their own departures from
    /// the diaries the cursor names that they have left. The diaries the cursor names are
    /// read in the round trip that reads the caller's diaries; a diary it does not name,
    /// joined since, takes a second.
    package func changes(after cursor: ChangeCursor, inDiary diary: UUID? = nil, limit: Int) async throws -> Outcome {
        let named = cursor.positions.keys.filter { diary == nil || $0 == diary }.sorted { $0.uuidString < $1.uuidString }
        let first = try await readConfirmingSession(Self.deltaStatements(named: named, after: cursor, limit: limit, on: scope.database))
        var joined: [UUID: Int64] = [:]
        for row in first[0] {
            let member: UUID = try row.decode("diary_id")
            if diary == nil || member == diary { joined[member] = try row.decode("position_at_join", as: Int64.self) }
        }
        if let diary, joined[diary] == nil { throw DomainError.notFound("no such diary") }
        var reads = Array(zip(named, first.dropFirst()))
        let unnamed = joined.keys.filter { cursor[$0] == nil }.sorted { $0.uuidString < $1.uuidString }
        if !unnamed.isEmpty {
            reads += zip(unnamed, try await readConfirmingSession(unnamed.map { Self.changesStatement(inDiary: $0, after: joined[$0], limit: limit, on: scope.database) }))
        }
        return try page(of: reads, continuing: diary == nil ? ChangeCursor() : cursor, limit: limit)
    }

    /// Delta sync's first round trip: where the caller joined each of their diaries, and the
    /// changes after `cursor` in each diary it names.
    static func deltaStatements(named: [UUID], after cursor: ChangeCursor, limit: Int, on database: RequestScope.Database) -> [PostgresQuery] {
        ["select diary_id, position_at_join from my_positions_at_join()"]
            + named.map { Self.changesStatement(inDiary: $0, after: cursor[$0], limit: limit, on: database) }
    }

    /// The changes after `cursor` in `diaries` alone, one statement each, in one round trip:
    /// what a realtime socket reads when the feed wakes it for these diaries. A diary the
    /// cursor does not name starts where the caller joined it.
    package func changes(after cursor: ChangeCursor, inDiaries diaries: Set<UUID>, limit: Int) async throws -> Outcome {
        let sorted = diaries.sorted { $0.uuidString < $1.uuidString }
        let results = try await readConfirmingSession(sorted.map { Self.changesStatement(inDiary: $0, after: cursor[$0], limit: limit, on: scope.database) })
        return try page(of: Array(zip(sorted, results)), continuing: cursor, limit: limit)
    }

    /// `statements`, then whether the caller's session is still live, all in one snapshot: a
    /// revocation committed before any change the statements read is seen, and what they
    /// read is not handed on (the session's end, `unauthenticated`). One snapshot, too, for
    /// `authenticate()`, whose diaries and visible members the statements read through: a
    /// member who joins meanwhile is in both or in neither.
    ///
    /// On Citus one snapshot cannot span the nodes: a member who joined after
    /// `authenticate()` read the caller's diaries may be in a diary's shard but not among the
    /// users the caller may see, whose names would then read as NULL. The read is then
    /// behind its members (`changesStatement`'s `members_ahead`) and runs again, up to
    /// `behindAttempts` times in all.
    func readConfirmingSession(_ statements: [PostgresQuery]) async throws -> [PostgresRows] {
        var attempts = Backoff.Attempts(Self.behindRetry)
        while true {
            var results = try await scope.readInOneSnapshot(statements + ["select live_sessions(\([scope.identity.sessionID])) as id"])
            guard !(results.removeLast()).isEmpty else { throw DomainError.unauthenticated("the session has ended; sign in again") }
            guard try results.contains(where: Self.isBehindItsMembers), attempts.failures + 1 < Self.behindAttempts else { return results }
            try await Task.sleep(for: attempts.failed())
        }
    }

    static let behindAttempts = 5
    static let behindRetry = Backoff(base: .milliseconds(10), cap: .milliseconds(200), jitter: 0.5...1.0)

    /// Whether `rows`, a diary's changes (`changesStatement`), were read with fewer visible
    /// users than the diary has members.
    static func isBehindItsMembers(_ rows: PostgresRows) throws -> Bool {
        guard rows.columnNames.contains("members_ahead"), let head = rows.first else { return false }
        return try head.decode("members_ahead", as: Bool?.self) == true
    }

    /// One page from each diary's rows (`changesStatement`): the oldest first across diaries,
    /// each diary's own order kept; `cursor` moved past what the page holds.
    func page(of reads: [(diary: UUID, rows: PostgresRows)], continuing cursor: ChangeCursor, limit: Int) throws -> Outcome {
        var next = cursor
        var queues: [[LoggedChange]] = []
        for (diary, rows) in reads {
            guard let head = rows.first else { continue }
            let after = try head.decode("read_after", as: Int64.self)
            if let position = try head.decode("change_position", as: Int64?.self) {
                let pruned = try head.decode("pruned_position", as: Int64.self)
                if after > position || after < pruned { return .resyncRequired }
                next[diary] = after
            } else {
                // A diary left: kept in the cursor until its departure has been told.
                next[diary] = try head.decode("position", as: Int64?.self) == nil ? nil : after
            }
            queues.append(try rows.compactMap { try LoggedChange(row: $0, diary: diary, subjects: .all, links: scope.photoLinks, invites: scope.inviteLinks) })
        }

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
        return .page(Page(events: changes.compactMap(\.event), next: next, hasMore: hasMore))
    }

    /// A diary's changes after `after` (or, without one, after the caller's own latest join),
    /// one row beyond `limit`, each with the subject it shows in full (entry, member, diary)
    /// as the REST API renders it to the caller, in their sections of the row: the diary's
    /// position, its changes and what they render, from one snapshot, in one statement that
    /// on Citus routes to the diary's shard. The first row carries the diary's position,
    /// pruning line, type and where the read began, even when no change is returned. Of a diary
    /// the caller is not in, only their own departure. `offset 0` keeps a subject's
    /// subquery apart, so that its test of the change's kind gates it (a one-time filter):
    /// flattened into the statement, the diary's columns were read for every change. `start`
    /// is materialized, so that where the read begins bounds the log's index range: inlined,
    /// it became a filter, and each read walked the diary's whole log (PlanGuardTests).
    /// `subjects` says whose subjects it renders: the fan-out's batch, which a member's or
    /// the diary's own change refuses, renders entries alone, and so has the smaller plan,
    /// which Citus makes anew for every read. `members_ahead` is read on Citus alone
    /// (`readConfirmingSession`): on one PostgreSQL the statement shares `authenticate()`'s
    /// snapshot, and is never ahead of it.
    static func changesStatement(
        inDiary diary: UUID, after: Int64?, limit: Int, subjects: Subjects = .all, on database: RequestScope.Database
    ) -> PostgresQuery {
        let membersAhead: PostgresQuery = switch database {
        case .single: "false"
        case .citus: """
            diaries.type <> 'anonymous' and exists (
                select 1 from diary_members dm
                where dm.diary_id = \(diary) and not (dm.user_id = any (app_visible_user_ids())))
            """
        }
        let memberAndDiary: (columns: PostgresQuery, joins: PostgresQuery) = switch subjects {
        case .entries: ("", "")
        case .all: (
            ", null::text as member_section, m.*, null::text as diary_section, dd.*",
            """
            left join lateral (
                select \(DiaryRepository.memberColumns) from member_profiles p
                where c.kind = 'member.joined' and p.diary_id = \(diary) and p.user_id = c.user_id offset 0) m on true
            left join lateral (
                \(DiaryRepository.diaryColumns(ofDiary: diary))
                where c.kind = 'diary.updated' and diaries.id = \(diary) and \(DiariesPolicy.select.using) offset 0) dd on true
            """)
        }
        return """
        with d as (
            select diaries.change_position, diaries.pruned_position, diaries.type, \(membersAhead) as members_ahead
            from diaries
            where diaries.id = \(diary) and \(DiariesPolicy.select.using)),
        start as materialized (
            select coalesce(greatest(\(after)::bigint, (
                select max(j.position) - 1 from change_log j
                where j.diary_id = \(diary) and j.kind = 'member.joined' and j.user_id = app_user_id())), -1) as read_after)
        select d.change_position, d.pruned_position, d.type as diary_type, d.members_ahead, start.read_after,
            c.position, c.kind, c.entry_id, c.user_id, c.at,
            case when c.user_id = app_user_id() then c.user_id
                 when d.type <> 'anonymous' then c.user_id
                 else c.user_alias end as public_user_id,
            null::text as entry_section, e.*\(memberAndDiary.columns)
        from start
        left join d on true
        left join lateral (
            select c.* from change_log c
            where c.diary_id = \(diary) and c.position > start.read_after
              and (d.change_position is not null or (c.kind = 'member.left' and c.user_id = app_user_id()))
            order by c.position limit \(limit + 1)) c on true
        left join lateral (
            \(EntryRepository.entryColumns(inDiary: diary))
            where c.kind in ('entry.created', 'entry.updated') and entries.id = c.entry_id and \(EntriesPolicy.select(inDiary: diary))) e on true
        \(memberAndDiary.joins)
        order by c.position
        """
    }

    /// Whose subjects a read of the log renders beside each change.
    enum Subjects: Sendable {
        /// Entries, members and the diary: what a socket and delta sync read.
        case all
        /// Entries alone; a member's or the diary's change is read without what it shows.
        case entries
    }

    /// A row of the log, as read for the caller, with what it shows. `userID` is the real id
    /// and stays here: what leaves is `publicUserID`, the alias wherever the caller may not
    /// see the id.
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
        /// What the event carries; nil for a change whose subject is gone since (an entry
        /// deleted, a member who left again): the change that removed it follows.
        var data: ChangeData?

        /// Nil for the row that carries only the diary's position. `subjects` is what the
        /// statement rendered (`changesStatement`): a subject it left out leaves `data` nil.
        init?(row: PostgresRow, diary: UUID, subjects: Subjects, links: PhotoLinks, invites: InviteLinks) throws {
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
            switch type {
            case .entryCreated, .entryUpdated:
                let entry = try row.section(after: "entry_section")
                if try entry.decode("id", as: UUID?.self) != nil { data = .entry(try EntryRepository.entry(from: entry, links: links)) }
            case .memberJoined:
                guard subjects == .all else { break }
                let member = try row.section(after: "member_section")
                if try member.decode("public_id", as: UUID?.self) != nil { data = .member(try DiaryRepository.member(from: member, links: links)) }
            case .diaryUpdated:
                guard subjects == .all else { break }
                let shown = try row.section(after: "diary_section")
                if try shown.decode("id", as: UUID?.self) != nil { data = .diary(try DiaryRepository.diary(from: shown, invites: invites, links: links)) }
            case .entryDeleted:
                data = entryID.map { .entryDeleted(DeletedEntry(id: $0)) }
            case .entryRead:
                if let entryID, let publicUserID { data = .entryRead(EntryRead(entryId: entryID, userId: publicUserID, readAt: at)) }
            case .memberLeft:
                data = publicUserID.map { .memberLeft(DepartedMember(userId: $0)) }
            }
        }

        var event: ChangeEvent? {
            data.map { ChangeEvent(id: cursor.encoded, type: type, diaryId: diaryID, at: at, data: $0) }
        }
    }
}
