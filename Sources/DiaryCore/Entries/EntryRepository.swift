package import DiaryModels
package import Foundation
import PostgresClient

/// Entries and read receipts, always as the caller (see `RequestScope`).
package struct EntryRepository: Sendable {
    let scope: RequestScope

    package init(scope: RequestScope) {
        self.scope = scope
    }

    /// An author who has left the diary is no longer a co-member, so their profile is not
    /// visible: they appear under this id and name.
    package static let departedAuthorID = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
    package static let departedAuthorName = "退会したユーザー"

    /// An entry's columns, its author, its readers and its photos, for entries of `diary`.
    /// The diary's member profiles are read once, for authors and readers alike: with
    /// row-level security each read of member_profiles costs three tables' policies.
    /// Readers and photos come as parallel arrays in one order, which decode without a JSON
    /// parser. Their subqueries name the diary by its value, not as `entries.diary_id`: Citus
    /// routes a statement to the diary's one shard only when no subquery is correlated on the
    /// distribution column (else one task per shard, 48 ms instead of 4; CitusClusterTests).
    static func entryColumns(inDiary diary: UUID, from entries: PostgresQuery = "entries") -> PostgresQuery {
        """
        with profiles as (select * from member_profiles where member_profiles.diary_id = \(diary))
        select entries.id, entries.diary_id, entries.content, entries.question,
            entries.created_at, entries.updated_at, entries.user_id = (select app_user_id()) as is_mine,
            author.public_id as author_id, author.display_name as author_name, author.profile_photo as author_image,
            reads.reader_ids, reads.read_at,
            photos.photo_ids, photos.photo_hashes, photos.photo_types, photos.photo_bytes, photos.photo_widths, photos.photo_heights
        from \(entries)
        left join profiles author on author.user_id = entries.user_id
        cross join lateral (
            select array_agg(reader.public_id order by entry_reads.read_at, reader.public_id) as reader_ids,
                   array_agg(entry_reads.read_at order by entry_reads.read_at, reader.public_id) as read_at
            from entry_reads
            join profiles reader on reader.user_id = entry_reads.user_id
            where entry_reads.diary_id = \(diary) and entry_reads.entry_id = entries.id and \(EntryReadsPolicy.select.using)) as reads
        cross join lateral (
            select array_agg(entry_photos.id order by entry_photos.position) as photo_ids,
                   array_agg(entry_photos.content_hash order by entry_photos.position) as photo_hashes,
                   array_agg(entry_photos.content_type order by entry_photos.position) as photo_types,
                   array_agg(entry_photos.bytes order by entry_photos.position) as photo_bytes,
                   array_agg(entry_photos.width order by entry_photos.position) as photo_widths,
                   array_agg(entry_photos.height order by entry_photos.position) as photo_heights
            from entry_photos
            where entry_photos.diary_id = \(diary) and entry_photos.entry_id = entries.id and \(EntryPhotosPolicy.select.using)) as photos
        """
    }

    /// What a post or an edit answers: `entry_response`, the twin of `entryColumns` in SQL
    /// (ReadBackTests), read in the write's transaction (`ReadBack`).
    static func readBack(_ entry: UUID, in diary: UUID) -> ReadBack {
        .response("entry_response", routedBy: "read_back_entry", "\(diary), \(entry)")
    }

    /// Each photo gets a URL from `links`: the row came through the caller's policies.
    static func entry(from row: PostgresRow, links: PhotoLinks) throws -> Entry {
        let readers = try row.decodeAggregate("reader_ids", as: UUID.self)
        let readAt = try row.decodeAggregate("read_at", as: Date.self, count: readers.count)
        let photoIDs = try row.decodeAggregate("photo_ids", as: UUID.self)
        let hashes = try row.decodeAggregate("photo_hashes", as: String.self, count: photoIDs.count)
        let types = try row.decodeAggregate("photo_types", as: String.self, count: photoIDs.count)
        let sizes = try row.decodeAggregate("photo_bytes", as: Int.self, count: photoIDs.count)
        let widths = try row.decodeAggregate("photo_widths", as: Int.self, count: photoIDs.count)
        let heights = try row.decodeAggregate("photo_heights", as: Int.self, count: photoIDs.count)
        let photos = photoIDs.indices.map {
            links.photo(id: photoIDs[$0], hash: hashes[$0], contentType: types[$0], bytes: sizes[$0], width: widths[$0], height: heights[$0])
        }
        return Entry(
            id: try row.decode("id"), diaryId: try row.decode("diary_id"),
            author: Entry.Author(
                id: try row.decode("author_id", as: UUID?.self) ?? departedAuthorID,
                displayName: try row.decode("author_name", as: String?.self) ?? departedAuthorName,
                profileImageUrl: links.profileImageURL(try row.decode("author_image"))
            ),
            content: try row.decode("content"), question: try row.decode("question"), images: photos.map(\.url), photos: photos,
            createdAt: try row.decode("created_at"), updatedAt: try row.decode("updated_at"),
            readBy: zip(readers, readAt).map { ReadReceipt(userId: $0, readAt: $1) },
            isMine: try row.decode("is_mine")
        )
    }

    static func diaryVisible(_ diary: UUID) -> PostgresQuery {
        "select 1 from diaries where diaries.id = \(diary) and \(DiariesPolicy.select.using)"
    }

    /// Inserts the entry with its photos, or recognises a replay of the same post (content,
    /// question and photos) by the same author. Any other reuse of the id is
    /// `entry_id_conflict`, and the stored entry is untouched.
    package func create(in diary: UUID, id: UUID?, content: String, question: String?, photoIDs: [UUID] = []) async throws -> Creation<Entry> {
        let entryID = id ?? UUID()
        let results = try await scope.run(Self.postStatements(entryID, in: diary, content: content, question: question, photoIDs: photoIDs), thenRead: [Self.readBack(entryID, in: diary)])
        guard !results[0].isEmpty else { throw DomainError.notFound("no such diary") }
        guard let row = results[results.count - 1].first else { throw Self.entryIDConflict }
        let entry = try Self.entry(from: row, links: scope.photoLinks)
        if !results[1].isEmpty { return .created(entry) }
        guard entry.isMine, entry.content == content, entry.question == question, entry.photos.map(\.id) == photoIDs else { throw Self.entryIDConflict }
        return .replayed(entry)
    }

    /// A post's statements, before its read-back.
    static func postStatements(_ entryID: UUID, in diary: UUID, content: String, question: String?, photoIDs: [UUID]) -> [PostgresQuery] {
        // The photos are attached only if this transaction inserted the entry: a replay
        // must not change them. The insert says so in a transaction-local setting.
        let attach: [PostgresQuery] = photoIDs.isEmpty ? [] : [
            "select set_entry_photos(\(diary), \(entryID), \(photoIDs)) where current_setting('app.inserted_entry', true) = \(entryID.canonicalText)",
        ]
        return [
            Self.diaryVisible(diary),
            // post_entry tries nothing outside the caller's diaries: an invisible diary is a 404, never a 403.
            """
            select set_config('app.inserted_entry', \(entryID.canonicalText), true)
            where post_entry(\(diary), \(entryID), \(content), \(question), \(photoIDs.map(\.canonicalText))::text[])
            """,
        ] + attach
    }

    static let entryIDConflict = DomainError(.entryIDConflict, "an entry with this id already exists with other content")

    package struct Cursor: Sendable {
        var createdAt: String
        var id: UUID

        init(createdAt: String, id: UUID) {
            self.createdAt = createdAt
            self.id = id
        }

        package init?(_ text: String) {
            guard text.count <= 128, let data = Base64URL.decode(text), let plain = String(data: data, encoding: .utf8) else { return nil }
            let parts = plain.split(separator: "|")
            guard parts.count == 2, PostgresTimestamp.parse(String(parts[0])) != nil, let id = UUID(canonicalText: String(parts[1])) else { return nil }
            self.init(createdAt: String(parts[0]), id: id)
        }

        package var encoded: String { Base64URL.encode(Data("\(createdAt)|\(id.canonicalText)".utf8)) }
    }

    /// A calendar day, `YYYY-MM-DD`, read in the caller's time zone.
    package struct Day: Sendable, Equatable {
        package var text: String

        /// A real date from 1900-01-01 to 9999-12-31.
        package init?(_ text: String) {
            guard text.utf8.count == 10, let match = text.wholeMatch(of: /([0-9]{4})-([0-9]{2})-([0-9]{2})/),
                  let year = Int(match.1), let month = Int(match.2), let day = Int(match.3),
                  (1900...9999).contains(year), (1...12).contains(month), day >= 1 else { return nil }
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            guard let days = calendar.range(of: .day, in: .month, for: calendar.date(from: DateComponents(year: year, month: month, day: 1))!),
                  days.contains(day) else { return nil }
            self.text = text
        }
    }

    /// Newest first, keyset-paginated over (created_at, id): one round trip per page. With
    /// `day`, only that local day's entries: its bounds become instants in the caller's zone,
    /// so the page is one range of `entries_timeline`, as the calendar's month is.
    package func timeline(of diary: UUID, limit: Int, before cursor: Cursor?, on day: Day? = nil) async throws -> EntryPage {
        let results = try await scope.read(Self.timelineStatements(of: diary, limit: limit, before: cursor, on: day))
        guard !results[0].isEmpty else { throw DomainError.notFound("no such diary") }
        var entries = try results[results.count - 1].map { try Self.entry(from: $0, links: scope.photoLinks) }
        var next: String?
        if entries.count > limit {
            entries.removeLast()
            if let last = entries.last {
                next = Cursor(createdAt: PostgresTimestamp.format(last.createdAt), id: last.id).encoded
            }
        }
        let changesCursor = cursor == nil ? try ChangeLogRepository.position(ofDiary: diary, from: results[0]).encoded : nil
        return EntryPage(entries: entries, nextCursor: next, changesCursor: changesCursor)
    }

    /// The diary's position, read before the page (the first page's changesCursor, see `Diary`), then the page.
    static func timelineStatements(of diary: UUID, limit: Int, before cursor: Cursor?, on day: Day? = nil) -> [PostgresQuery] {
        let keyset: PostgresQuery = cursor.map { "and (entries.created_at, entries.id) < (\($0.createdAt)::timestamptz, \($0.id))" } ?? ""
        let onDay: PostgresQuery = day.map { day in
            """
            and entries.created_at >= (select \(day.text)::date::timestamp at time zone u.time_zone from users u where u.id = (select app_user_id()))
            and entries.created_at < (select (\(day.text)::date + 1)::timestamp at time zone u.time_zone from users u where u.id = (select app_user_id()))
            """
        } ?? ""
        // The page's ids first, by the index alone, then each of those rows, with its author,
        // readers and photos. The row is a lateral subquery of the page, kept apart by
        // `offset 0`, so no plan can turn the join inside out: flattened, a generic plan
        // (whose estimate for `diary_id = $n` is a diary of a few rows) walked the whole
        // diary and ran the page once for each of its entries (PlanGuardTests).
        let ids: PostgresQuery = """
            (select entries.id from entries
             where \(EntriesPolicy.select(inDiary: diary)) \(keyset) \(onDay)
             order by entries.created_at desc, entries.id desc limit \(limit + 1)) page
            cross join lateral (select * from entries where entries.diary_id = \(diary) and entries.id = page.id offset 0) entries
            """
        let page: PostgresQuery = """
            \(Self.entryColumns(inDiary: diary, from: ids))
            where \(EntriesPolicy.select(inDiary: diary))
            order by entries.created_at desc, entries.id desc
            """
        return [ChangeLogRepository.positionStatement(ofDiary: diary), Self.walkTheTimeline, page]
    }

    /// A diary's newest entries (a page's ids, the home list's last entry) come from
    /// `entries_timeline` in its order, never from a bitmap of the diary's key sorted after:
    /// a generic plan, or statistics taken before a diary grew, expect a few rows where
    /// there are thousands, and the bitmap reads every one of them (PlanGuardTests). Local to
    /// the read's transaction.
    static let walkTheTimeline: PostgresQuery = "select set_config('enable_bitmapscan', 'off', true)"

    static func findStatement(_ id: UUID, in diary: UUID) -> PostgresQuery {
        """
        \(Self.entryColumns(inDiary: diary))
        where \(EntriesPolicy.select(inDiary: diary)) and entries.id = \(id)
        """
    }

    package func find(_ id: UUID, in diary: UUID) async throws -> Entry {
        let rows = try await scope.read(Self.findStatement(id, in: diary))
        guard let row = rows.first else { throw DomainError.notFound("no such entry") }
        return try Self.entry(from: row, links: scope.photoLinks)
    }

    /// Author only, through `edit_entry`, which logs the change: members who are not the
    /// author get 403, everyone else 404. `photoIDs`, when given, become the entry's photos
    /// in that order; dropped ones are deleted. `clearingQuestion` removes the question.
    package func update(_ id: UUID, in diary: UUID, content: String?, question: String?, clearingQuestion: Bool = false, photoIDs: [UUID]? = nil) async throws -> Entry {
        // set_entry_photos leaves an entry that is not the caller's alone, so edit_entry's
        // verdict (404 or 403) is the one the caller gets.
        let attach: [PostgresQuery] = photoIDs.map { ["select set_entry_photos(\(diary), \(id), \($0))"] } ?? []
        let results = try await scope.run([
            "select edit_entry(\(diary), \(id), \(content), \(question), \(clearingQuestion)) as outcome",
        ] + attach, thenRead: [Self.readBack(id, in: diary)])
        try PolicyTwin.requireDone(results[0], missing: "no such entry", forbidden: "only the author can edit this entry")
        guard let row = results[results.count - 1].first else { throw DomainError.notFound("no such entry") }
        return try Self.entry(from: row, links: scope.photoLinks)
    }

    /// Author only, through `delete_entry`, which keeps the counters and logs it.
    package func delete(_ id: UUID, in diary: UUID) async throws {
        let rows = try await scope.run("select delete_entry(\(diary), \(id)) as outcome")
        try PolicyTwin.requireDone(rows, missing: "no such entry", forbidden: "only the author can delete this entry")
    }

    /// Records the caller's read through `mark_as_read`; reading again just moves read_at.
    package func markRead(_ id: UUID, in diary: UUID) async throws {
        let results = try await scope.run(Self.markReadStatements(id, in: diary))
        guard !results[0].isEmpty else { throw DomainError.notFound("no such entry") }
    }

    static func markReadStatements(_ id: UUID, in diary: UUID) -> [PostgresQuery] {
        [
            "select 1 from entries where \(EntriesPolicy.select(inDiary: diary)) and entries.id = \(id)",
            "select mark_as_read(\(diary), \(id), (select app_user_id()))",
        ]
    }

    package func reads(of id: UUID, in diary: UUID) async throws -> [ReadReceipt] {
        let results = try await scope.read([
            "select 1 from entries where \(EntriesPolicy.select(inDiary: diary)) and entries.id = \(id)",
            """
            select reader.public_id, entry_reads.read_at from entry_reads
            join member_profiles reader on reader.diary_id = entry_reads.diary_id and reader.user_id = entry_reads.user_id
            where entry_reads.diary_id = \(diary) and entry_reads.entry_id = \(id) and \(EntryReadsPolicy.select.using)
            order by entry_reads.read_at, reader.public_id
            """,
        ])
        guard !results[0].isEmpty else { throw DomainError.notFound("no such entry") }
        return try results[1].map { ReadReceipt(userId: try $0.decode("public_id"), readAt: try $0.decode("read_at")) }
    }
}
