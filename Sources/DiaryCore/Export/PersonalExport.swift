package import DiaryModels
package import Foundation
package import Logging
package import NIOCore
import PostgresClient

/// Everything the service holds about the caller, as a ZIP (the APPI right of disclosure):
/// profile, settings and devices; memberships; every entry they wrote, with its photos;
/// their read receipts; their purchase events. Others' entries belong to their authors and
/// are left out. Their own entries of diaries they left come too, with those diaries
/// (`departures.json`), while each departure's window is open (`DepartureRepository`).
/// The entries, reads, photos and events come from one snapshot.
package struct PersonalExport: Sendable {
    package let scope: RequestScope
    package let store: any PhotoStore
    package let logger: Logger
    /// `CLOSED_DIARY_RETENTION_DAYS`: how long a departure keeps the caller's entries theirs to export.
    package let departureWindow: Duration

    static let pageSize = 500

    package init(scope: RequestScope, store: any PhotoStore, departureWindow: Duration, logger: Logger) {
        self.scope = scope
        self.store = store
        self.departureWindow = departureWindow
        self.logger = logger
    }

    /// Counts the export against today's limit; returns the caller's days, for the file name.
    package static func admit(scope: RequestScope, exportsPerDay: Int) async throws -> LocalCalendar {
        let results = try await scope.run([
            "select time_zone from users where users.id = (select app_user_id())",
            "select record_export(\(exportsPerDay)::integer) as admitted",
        ])
        try ExportArchive.checkAdmitted(results[1], exportsPerDay: exportsPerDay)
        return LocalCalendar(zoneName: try results[0].first?.decode("time_zone") ?? LocalCalendar.fallbackZone)
    }

    package func write(exportedAt: Date, to sink: (ByteBuffer) async throws -> Void) async throws {
        // Each is one small read; the history below shares a snapshot.
        // The profile photo as its path in the archive, which carries it.
        let me = try await UserRepository(scope: scope.exporting()).me()
        let devices = try await DeviceRepository(scope: scope).list().devices
        let memberships = try await DiaryRepository(scope: scope).list()
        let departures = try await DepartureRepository(scope: scope, window: departureWindow).list()
        try await scope.snapshot { reader in try await withoutActuallyEscaping(sink) { sink in
            var archive = ExportArchive(sink: sink, modified: exportedAt)
            let departed = try await DepartureRepository.exportable(reader, window: departureWindow)
            try await archive.json(PersonalProfile(me: me, devices: devices, exportedAt: exportedAt), path: "profile.json")
            try await archive.json(DiaryList(diaries: memberships), path: "memberships.json")
            try await archive.json(departures, path: "departures.json")
            try await archive.jsonArray(path: "entries.json") { element in
                try await forEachOwnEntry(reader) { try await element($0) }
                if !departed.isEmpty { try await forEachDepartedEntry(reader, in: departed) { try await element($0) } }
            }
            try await archive.jsonArray(path: "reads.json") { element in
                try await forEachRead(reader) { try await element($0) }
            }
            let events = try await reader.read("select * from my_billing_events()")
            try await archive.json(try events.map { row in
                PersonalBillingEvent(
                    eventId: try row.decode("event_id"), type: try row.decode("event_type"), productId: try row.decode("product_id"),
                    expiresAt: try row.decode("expiration_at"), eventAt: try row.decode("event_at"),
                    receivedAt: try row.decode("received_at"), outcome: try row.decode("outcome"))
            }, path: "billing.json")
            try await archive.photos(reader, store: store, where: """
                \(EntryPhotosPolicy.select.using) and exists (
                    select 1 from entries where entries.diary_id = entry_photos.diary_id and entries.id = entry_photos.entry_id
                    and entries.user_id = (select app_user_id()))
                """, logger: logger)
            if !departed.isEmpty {
                try await archive.photos(reader, store: store, from: .departedEntryPhotos(diaries: departed), where: "true", logger: logger)
            }
            try await archive.photos(reader, store: store, from: .profilePhotos, where: "profile_photos.user_id = (select app_user_id())", logger: logger)
            try await archive.text(path: "README.txt") { chunk in try await chunk(ExportReadme.personal(exportedAt: exportedAt)) }
            try await archive.finish()
        } }
    }

    private func forEachOwnEntry(_ reader: RequestScope.SnapshotReader, _ body: (PersonalExportedEntry) async throws -> Void) async throws {
        try await reader.forEachRow(pagesOf: Self.pageSize, { after in
            """
            select entries.id, entries.diary_id, entries.content, entries.question, entries.created_at, entries.updated_at,
                photos.photo_ids, photos.photo_types
            from entries
            cross join lateral (
                select array_agg(entry_photos.id order by entry_photos.position) as photo_ids,
                       array_agg(entry_photos.content_type order by entry_photos.position) as photo_types
                from entry_photos
                where entry_photos.diary_id = entries.diary_id and entry_photos.entry_id = entries.id and \(EntryPhotosPolicy.select.using)) as photos
            where entries.user_id = (select app_user_id()) and \(EntriesPolicy.select.using) \(ExportArchive.entriesAfter(after))
            order by entries.created_at, entries.id limit \(Self.pageSize)
            """
        }, key: ExportArchive.EntryKey.init) { row in try await body(try Self.ownEntry(row)) }
    }

    /// The caller's own entries in diaries they left, a page per round trip, through
    /// `my_departed_entries`: the entries' policies no longer show them those diaries.
    private func forEachDepartedEntry(_ reader: RequestScope.SnapshotReader, in diaries: [UUID], _ body: (PersonalExportedEntry) async throws -> Void) async throws {
        try await reader.forEachRow(pagesOf: Self.pageSize, { (after: ExportArchive.EntryKey?) -> PostgresQuery in
            let afterCreatedAt: String? = after.map { PostgresTimestamp.format($0.createdAt) }
            return """
                select * from my_departed_entries(\(diaries), \(afterCreatedAt)::timestamptz, \(after?.id), \(Self.pageSize)::integer)
                """
        }, key: ExportArchive.EntryKey.init) { row in try await body(try Self.ownEntry(row)) }
    }

    private static func ownEntry(_ row: PostgresRow) throws -> PersonalExportedEntry {
        let ids = try row.decodeAggregate("photo_ids", as: UUID.self)
        let types = try row.decodeAggregate("photo_types", as: String.self, count: ids.count)
        return PersonalExportedEntry(
            id: try row.decode("id"), diaryId: try row.decode("diary_id"), content: try row.decode("content"),
            question: try row.decode("question"),
            photos: zip(ids, types).map { ExportArchive.photoPath(id: $0, contentType: $1) },
            createdAt: try row.decode("created_at"), updatedAt: try row.decode("updated_at"))
    }

    private func forEachRead(_ reader: RequestScope.SnapshotReader, _ body: (PersonalReadReceipt) async throws -> Void) async throws {
        try await reader.forEachRow(pagesOf: Self.pageSize, { (after: PersonalReadReceipt?) -> PostgresQuery in
            let keyset: PostgresQuery = after.map { "and (entry_reads.diary_id, entry_reads.entry_id) > (\($0.diaryId), \($0.entryId))" } ?? ""
            return """
                select entry_reads.diary_id, entry_reads.entry_id, entry_reads.read_at from entry_reads
                where entry_reads.user_id = (select app_user_id()) and \(EntryReadsPolicy.select.using) \(keyset)
                order by entry_reads.diary_id, entry_reads.entry_id limit \(Self.pageSize)
                """
        }, key: Self.read) { row in try await body(try Self.read(row)) }
    }

    private static func read(_ row: PostgresRow) throws -> PersonalReadReceipt {
        PersonalReadReceipt(diaryId: try row.decode("diary_id"), entryId: try row.decode("entry_id"), readAt: try row.decode("read_at"))
    }
}
