import DiaryModels
import Foundation
import Logging
import Metrics
import NIOCore
import PostgresClient

/// The files of an export as they go into its ZIP and out to the client: JSON and HTML
/// deflated, photos stored (they are compressed already), output gathered into writes of
/// about 64 KiB.
struct ExportArchive {
    private var zip = ZipArchiveWriter()
    private let sink: (ByteBuffer) async throws -> Void
    private let modified: Date
    private var pending = ByteBuffer()

    static let flushBytes = 64 * 1024
    /// Photo rows per read.
    static let photoPageSize = 500

    /// Pretty-printed and sorted, for people reading the files in twenty years; dates as the API writes them.
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(PostgresTimestamp.format(date))
        }
        return encoder
    }()

    init(sink: @escaping (ByteBuffer) async throws -> Void, modified: Date) {
        self.sink = sink
        self.modified = modified
    }

    mutating func json(_ value: some Encodable, path: String) async throws {
        try await emit(zip.startEntry(path: path, compression: .deflated, modified: modified))
        try await emit(zip.write(ByteBuffer(bytes: Self.encoder.encode(value))))
        try await emit(zip.finishEntry())
    }

    /// A JSON array written an element at a time: `body` calls `element` for each.
    mutating func jsonArray<Element: Encodable>(
        path: String, _ body: (_ element: (Element) async throws -> Void) async throws -> Void
    ) async throws {
        try await emit(zip.startEntry(path: path, compression: .deflated, modified: modified))
        var first = true
        try await emit(zip.write(ByteBuffer(string: "[\n")))
        try await body { element in
            var bytes = ByteBuffer(string: first ? "" : ",\n")
            bytes.writeBytes(try Self.encoder.encode(element))
            first = false
            try await emit(zip.write(bytes))
        }
        try await emit(zip.write(ByteBuffer(string: "\n]\n")))
        try await emit(zip.finishEntry())
    }

    /// A text file written in pieces: `body` calls `chunk` with each.
    mutating func text(path: String, _ body: (_ chunk: (String) async throws -> Void) async throws -> Void) async throws {
        try await emit(zip.startEntry(path: path, compression: .deflated, modified: modified))
        try await body { text in try await emit(zip.write(ByteBuffer(string: text))) }
        try await emit(zip.finishEntry())
    }

    /// The tables whose rows name photos' files, with the same columns.
    enum PhotoTable {
        case entryPhotos
        case profilePhotos
        /// The caller's own photos in these diaries they left (`my_departed_entry_photos`).
        case departedEntryPhotos(diaries: [UUID])

        var name: PostgresQuery {
            switch self {
            case .entryPhotos: "entry_photos"
            case .profilePhotos: "profile_photos"
            case .departedEntryPhotos: "departed_entry_photos"
            }
        }

        var source: PostgresQuery {
            switch self {
            case .entryPhotos, .profilePhotos: name
            case .departedEntryPhotos(let diaries): "my_departed_entry_photos(\(diaries)) as departed_entry_photos"
            }
        }
    }

    /// The photos that `visible` selects from `table`, as `photos/<id>.<ext>`, their
    /// bytes read from the store a chunk at a time. A file the store has lost is left out
    /// and logged: one missing photo must not keep the rest of a diary from its owners.
    mutating func photos(
        _ reader: RequestScope.SnapshotReader, store: any PhotoStore, from table: PhotoTable = .entryPhotos, where visible: PostgresQuery, logger: Logger
    ) async throws {
        let name = table.name
        try await reader.forEachRow(pagesOf: Self.photoPageSize, { (after: UUID?) -> PostgresQuery in
            let keyset: PostgresQuery = after.map { "and \(name).id > \($0)" } ?? ""
            return """
                select \(name).id, \(name).content_hash, \(name).content_type, \(name).bytes, \(name).content_crc32
                from \(table.source) where \(visible) \(keyset)
                order by \(name).id limit \(Self.photoPageSize)
                """
        }, key: { try $0.decode("id", as: UUID.self) }) { row in
            let id: UUID = try row.decode("id")
            let hash: String = try row.decode("content_hash")
            let bytes: Int = try row.decode("bytes")
            let path = Self.photoPath(id: id, contentType: try row.decode("content_type"))
            let kept = try row.decode("content_crc32", as: Int64?.self)
            let checksum: UInt32
            let photo: PhotoBytes
            do {
                // A photo without a kept checksum (not backfilled yet) is read once more first.
                if let kept {
                    checksum = UInt32(truncatingIfNeeded: kept)
                } else {
                    checksum = try await store.checksum(of: hash, size: bytes)
                }
                photo = try await store.bytes(of: hash, range: 0..<bytes)
            } catch PhotoStoreError.missing {
                logger.error("export: a photo's file is missing from the store", metadata: ["photo_id": "\(id)", "hash": "\(hash)"])
                Counter(label: "export_missing_photos_total").increment()
                return
            }
            try await emit(zip.startEntry(path: path, compression: .stored(crc32: checksum, size: UInt64(bytes)), modified: modified))
            try await photo.forEachChunk { chunk in try await emit(zip.write(chunk)) }
            try await emit(zip.finishEntry())
        }
    }

    /// Entries after `after` in (created_at, id) order, the key that exports page by.
    static func entriesAfter(_ after: EntryKey?) -> PostgresQuery {
        after.map { "and (entries.created_at, entries.id) > (\(PostgresTimestamp.format($0.createdAt))::timestamptz, \($0.id))" } ?? ""
    }

    struct EntryKey {
        var createdAt: Date
        var id: UUID
        init(_ row: PostgresRow) throws {
            createdAt = try row.decode("created_at")
            id = try row.decode("id")
        }
    }

    /// The central directory, and whatever is still gathered.
    mutating func finish() async throws {
        pending.writeImmutableBuffer(try zip.finish())
        if pending.readableBytes > 0 { try await sink(pending) }
        pending = ByteBuffer()
    }

    private mutating func emit(_ bytes: ByteBuffer) async throws {
        guard bytes.readableBytes > 0 else { return }
        pending.writeImmutableBuffer(bytes)
        if pending.readableBytes >= Self.flushBytes {
            let full = pending
            pending = ByteBuffer()
            pending.reserveCapacity(Self.flushBytes + 16 * 1024)
            try await sink(full)
        }
    }

    static func photoPath(id: UUID, contentType: String) -> String {
        let suffix = switch contentType {
        case "image/png": "png"
        case "image/webp": "webp"
        default: "jpg"
        }
        return "photos/\(id.canonicalText).\(suffix)"
    }

    /// An entry as `entries.json` holds it: photos as paths in the archive, and the day it
    /// was written where the requester lives.
    static func exported(_ entry: Entry, days: LocalCalendar) -> ExportedEntry {
        ExportedEntry(
            id: entry.id, author: entry.author, content: entry.content, question: entry.question,
            photos: entry.photos.map { photoPath(id: $0.id, contentType: $0.contentType) },
            readBy: entry.readBy, createdAt: entry.createdAt, updatedAt: entry.updatedAt,
            localDate: days.day(of: entry.createdAt))
    }

    /// `record_export`'s answer: false once the day's exports are used up.
    static func checkAdmitted(_ rows: PostgresRows, exportsPerDay: Int) throws {
        guard try rows.first?.decode("admitted", as: Bool.self) == true else {
            throw DomainError(.rateLimited, "at most \(exportsPerDay) exports a day; try again tomorrow")
        }
    }
}
