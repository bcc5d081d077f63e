package import DiaryModels
package import Foundation
package import Logging
package import NIOCore
import PostgresClient

/// A diary's export: a ZIP that any computer opens and any browser reads, written while
/// it is sent, in constant memory.
///
/// Every read runs in one snapshot (`RequestScope.snapshot`), so an entry written during
/// the export is in every file or in none, and writers never wait for it. Entries are read
/// a page at a time, oldest first, twice: once for `entries.json`, once for the book,
/// because a ZIP's files follow one another and holding either in memory would grow with
/// the diary. The photos follow, streamed from the store, then `README.txt`.
package struct DiaryExport: Sendable {
    package let scope: RequestScope
    package let store: any PhotoStore
    package let diaryID: UUID
    /// The requester's, from the admission.
    package let days: LocalCalendar
    package let logger: Logger

    /// Entries per read: a page's rows and its JSON stay well under a megabyte.
    static let pageSize = 250

    package init(scope: RequestScope, store: any PhotoStore, diaryID: UUID, days: LocalCalendar, logger: Logger) {
        self.scope = scope
        self.store = store
        self.diaryID = diaryID
        self.days = days
        self.logger = logger
    }

    /// Checks, in the caller's own transaction, that the diary is theirs to export and that
    /// today's limit allows another; returns the diary's name and the caller's days, for
    /// the file name and the export itself.
    package static func admit(scope: RequestScope, diary: UUID, exportsPerDay: Int) async throws -> (name: String, days: LocalCalendar) {
        let results = try await scope.run([
            "select diaries.name from diaries where diaries.id = \(diary) and \(DiariesPolicy.select.using)",
            "select time_zone from users where users.id = (select app_user_id())",
            // The caller's diaries from their identity, not `from diaries`: on Citus that would
            // run record_export on the diary's shard, away from the coordinator's counts.
            "select record_export(\(exportsPerDay)::integer) as admitted where \(diary)::uuid\(PolicyTwin.isCallersDiary)",
        ])
        guard let name: String = try results[0].first?.decode("name") else { throw DomainError.notFound("no such diary") }
        try ExportArchive.checkAdmitted(results[2], exportsPerDay: exportsPerDay)
        return (name, LocalCalendar(zoneName: try results[1].first?.decode("time_zone") ?? LocalCalendar.fallbackZone))
    }

    package func write(exportedAt: Date, to sink: (ByteBuffer) async throws -> Void) async throws {
        try await scope.snapshot { reader in try await withoutActuallyEscaping(sink) { sink in
            var archive = ExportArchive(sink: sink, modified: exportedAt)
            let rows = try await reader.read("\(DiaryRepository.diaryColumns(ofDiary: diaryID)) where diaries.id = \(diaryID) and \(DiariesPolicy.select.using)")
            guard let row = rows.first else { throw DomainError.notFound("no such diary") }
            // Members' photos and entries' photos as paths inside the archive, which carries them.
            let diary = try DiaryRepository.diary(from: row, invites: scope.inviteLinks, links: scope.photoLinks.serving(.archive))
            let counted = try await reader.read("select diaries.entry_count from diaries where diaries.id = \(diaryID)")
            let entryCount: Int = try counted.first?.decode("entry_count") ?? 0

            try await archive.json(ExportedDiary(diary: diary, exportedAt: exportedAt, timeZone: days.zoneName, entryCount: entryCount), path: "diary.json")

            try await archive.jsonArray(path: "entries.json") { element in
                try await forEachEntry(reader) { try await element($0) }
            }

            var book = ExportBook(diary: diary, exportedAt: exportedAt, timeZone: days.zoneName)
            try await archive.text(path: "index.html") { chunk in
                try await chunk(book.opening())
                var written = 0
                try await forEachEntry(reader) { entry in
                    written += 1
                    try await chunk(book.page(for: entry))
                }
                try await chunk(book.closing(entryCount: written))
            }

            try await archive.photos(reader, store: store, where: "entry_photos.diary_id = \(diaryID) and \(EntryPhotosPolicy.select.using)", logger: logger)
            // The members' profile photos, as the diary shows them: none in an anonymous diary.
            try await archive.photos(reader, store: store, from: .profilePhotos, where: """
                profile_photos.user_id in (select p.user_id from member_profiles p where p.diary_id = \(diaryID) and p.profile_photo is not null)
                """, logger: logger)
            try await archive.text(path: "README.txt") { chunk in
                try await chunk(ExportReadme.diary(name: diary.name, exportedAt: exportedAt))
            }
            try await archive.finish()
        } }
    }

    /// Every entry of the diary as the caller sees it, oldest first, a page per round trip.
    private func forEachEntry(_ reader: RequestScope.SnapshotReader, _ body: (ExportedEntry) async throws -> Void) async throws {
        try await reader.forEachRow(pagesOf: Self.pageSize, { after in
            """
            \(EntryRepository.entryColumns(inDiary: diaryID))
            where \(EntriesPolicy.select(inDiary: diaryID)) \(ExportArchive.entriesAfter(after))
            order by entries.created_at, entries.id limit \(Self.pageSize)
            """
        }, key: ExportArchive.EntryKey.init) { row in
            try await body(ExportArchive.exported(try EntryRepository.entry(from: row, links: scope.photoLinks.serving(.archive)), days: days))
        }
    }
}
