package import DiaryModels
package import Foundation
import PostgresClient

/// The change log as one member sees it (migration 0008), for the realtime socket and
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
    }

    package enum Outcome: Sendable {
        case page(Page)
        /// The cursor is older than the retained log, or was never issued.
        case resyncRequired
    }

    /// The log's position now: every change of a transaction not yet finished, or not yet
    /// begun, sorts after it. A statement that runs before a read, in the same transaction or
    /// an earlier one, gives a cursor at or before what that read sees.
    static let positionStatement: PostgresQuery = "select pg_snapshot_xmin(pg_current_snapshot())::text as horizon"

    static func position(from rows: PostgresRows) throws -> ChangeCursor {
        guard let text = try rows.first?.decode("horizon", as: String.self), let horizon = UInt64(text) else {
            throw DomainError.inconsistent("the change log's position cannot be read")
        }
        return ChangeCursor(horizon: horizon)
    }

    package func position() async throws -> ChangeCursor {
        try Self.position(from: try await scope.read(Self.positionStatement))
    }

    /// Changes after `cursor` that the caller may see, in order: in `diary` (the caller must
    /// be a member, else 404), or in every diary they belong to, plus their own departures.
    package func changes(after cursor: ChangeCursor, inDiary diary: UUID? = nil, limit: Int) async throws -> Outcome {
        var statements: [PostgresQuery] = []
        if let diary {
            statements.append("select 1 from diaries where diaries.id = \(diary) and \(DiariesPolicy.select.using)")
        }
        statements.append(Self.changesStatement(after: cursor, inDiary: diary, limit: limit))
        let results = try await scope.read(statements)
        if diary != nil, results[0].isEmpty { throw DomainError.notFound("no such diary") }
        let rows = results[results.count - 1]
        guard let first = rows.first else { throw DomainError.inconsistent("the change log's position cannot be read") }
        if try first.decode("cursor_ahead", as: Bool.self) || first.decode("cursor_pruned", as: Bool.self) {
            return .resyncRequired
        }
        guard let horizon = UInt64(try first.decode("horizon", as: String.self)) else {
            throw DomainError.inconsistent("the change log's position cannot be read")
        }
        var changes = try rows.compactMap(LoggedChange.init(row:))
        let hasMore = changes.count > limit
        if hasMore { changes.removeLast() }
        let next = hasMore ? changes[changes.count - 1].cursor : max(cursor, ChangeCursor(horizon: horizon))
        return .page(Page(events: try await render(changes), next: next, hasMore: hasMore))
    }

    /// One index range per diary (the log's primary key), so the cost follows the changes
    /// returned, not the log's size. Only changes of finished transactions are read (see
    /// migration 0008); the first row carries the snapshot's horizon even when none is.
    static func changesStatement(after cursor: ChangeCursor, inDiary diary: UUID?, limit: Int) -> PostgresQuery {
        let after: PostgresQuery = "(\(String(cursor.xact))::xid8, \(cursor.seq)::bigint)"
        let diaries: PostgresQuery = if let diary {
            "select \(diary)::uuid as diary_id"
        } else {
            """
            select unnest((select app_diary_ids())) as diary_id
            union
            select departure.diary_id from change_log departure
            where departure.kind = 'member.left' and departure.user_id = (select app_user_id()) and (departure.xact, departure.seq) > \(after)
            """
        }
        return """
            with snapshot as (
                select pg_snapshot_xmin(pg_current_snapshot()) as xmin, pg_snapshot_xmax(pg_current_snapshot()) as xmax
            ), seen as (\(diaries)
            ), changes as (
                select c.* from seen cross join lateral (
                    select c.* from change_log c
                    where c.diary_id = seen.diary_id and (c.xact, c.seq) > \(after) and c.xact < (select xmin from snapshot)
                    order by c.xact, c.seq limit \(limit + 1)) c
                order by c.xact, c.seq limit \(limit + 1)
            )
            select snapshot.xmin::text as horizon,
                \(String(cursor.xact))::xid8 > snapshot.xmax as cursor_ahead,
                \(after) < (horizon.xact, horizon.seq) as cursor_pruned,
                c.xact::text as xact, c.seq, c.diary_id, c.kind, c.entry_id, c.user_id, c.at,
                case when c.user_id = (select app_user_id()) then c.user_id
                     when diary.type <> 'anonymous' then c.user_id
                     else c.user_alias end as public_user_id
            from snapshot cross join change_log_horizon horizon
            left join changes c on true
            left join diaries diary on diary.id = c.diary_id
            order by c.xact, c.seq
            """
    }

    /// A row of the log, as read for the caller. `userID` is the real id and stays here:
    /// what leaves is `publicUserID`, the alias wherever the caller may not see the id.
    struct LoggedChange: Sendable {
        var cursor: ChangeCursor
        var type: ChangeType
        var diaryID: UUID
        var entryID: UUID?
        var userID: UUID?
        var publicUserID: UUID?
        var at: Date

        /// Nil for the row that carries only the horizon.
        init?(row: PostgresRow) throws {
            guard let xactText = try row.decode("xact", as: String?.self) else { return nil }
            guard let xact = UInt64(xactText), let type = ChangeType(rawValue: try row.decode("kind")) else {
                throw PostgresDecodingError(column: "kind", targetType: "ChangeType", failure: .malformed("unknown change"))
            }
            cursor = ChangeCursor(xact: xact, seq: try row.decode("seq"))
            self.type = type
            diaryID = try row.decode("diary_id")
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
