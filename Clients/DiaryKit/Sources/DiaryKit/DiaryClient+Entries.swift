import DiaryAPI
public import Foundation

/// An entry to post: its content and a client-chosen id, so that sending it again after a
/// lost answer returns the same entry instead of a second one.
public struct EntryDraft: Codable, Sendable, Hashable, Identifiable {
    /// The entry's id, chosen here; the server keeps it.
    public var id: UUID
    /// The diary it goes to.
    public var diaryID: String
    /// The text, 1 to 10,000 characters.
    public var content: String
    /// Today's question, when the entry answers it.
    public var question: String?
    /// Photos uploaded by the caller (`uploadPhoto`), in order: up to 4 (1 on the free plan).
    public var photoIDs: [String]
    /// Photos not yet uploaded, as files: a queued post uploads them when it is sent, then
    /// attaches them after `photoIDs`. The queue deletes each file once the post no longer needs it.
    public var photoFiles: [PhotoFile]

    /// Creates a draft with a new id.
    public init(id: UUID = UUID(), diaryID: String, content: String, question: String? = nil, photoIDs: [String] = [],
                photoFiles: [PhotoFile] = []) {
        self.id = id
        self.diaryID = diaryID
        self.content = content
        self.question = question
        self.photoIDs = photoIDs
        self.photoFiles = photoFiles
    }

    /// Reads a draft, DiaryKit 1's too (which had no `photoFiles`).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(UUID.self, forKey: .id)
        diaryID = try container.decode(String.self, forKey: .diaryID)
        content = try container.decode(String.self, forKey: .content)
        question = try container.decodeIfPresent(String.self, forKey: .question)
        photoIDs = try container.decode([String].self, forKey: .photoIDs)
        photoFiles = try container.decodeIfPresent([PhotoFile].self, forKey: .photoFiles) ?? []
    }
}

/// A photo a queued post will upload: a file the queue owns once it is queued.
public struct PhotoFile: Codable, Sendable, Hashable {
    /// The image file; keep it where the app's store survives (Application Support, not Caches).
    public var fileURL: URL
    /// Its format.
    public var format: PhotoFormat
    /// Set once it is uploaded, so a post sent again does not upload it twice.
    public internal(set) var photoID: String?

    /// A photo to upload from `fileURL`.
    public init(fileURL: URL, format: PhotoFormat) {
        self.fileURL = fileURL
        self.format = format
    }
}

extension DiaryClient {
    /// A page of a diary's timeline, newest first; pass `nextCursor` as `before` for the
    /// next. The first page carries `changesCursor`, to follow changes from.
    public func timeline(diaryID: String, limit: Int = 20, before: String? = nil) async throws -> EntryPage {
        EntryPage(try await perform {
            try await api.listEntries(path: .init(diaryId: diaryID), query: .init(limit: limit, before: before)).ok.body.json
        })
    }

    /// Posts an entry under the draft's id. Safe to repeat: the same id with the same content
    /// and photos returns the entry already written; with other content it throws
    /// `entry_id_conflict`. Most apps post through an `EntryQueue` instead, which keeps
    /// drafts across launches and retries them.
    public func post(_ draft: EntryDraft) async throws -> Entry {
        let body = Components.Schemas.CreateEntryRequest(
            id: draft.id.uuidString.lowercased(), content: draft.content, question: draft.question,
            photoIds: draft.photoIDs.isEmpty ? nil : draft.photoIDs)
        return Entry(try await perform {
            switch try await api.createEntry(path: .init(diaryId: draft.diaryID), body: .json(body)) {
            case .created(let created): try created.body.json
            case .ok(let replayed): try replayed.body.json
            case .undocumented(let status, _): throw DiaryError.unexpectedResponse(status: status)
            default: throw DiaryError.unexpectedResponse(status: 0)
            }
        })
    }

    /// One entry.
    public func entry(diaryID: String, entryID: String) async throws -> Entry {
        Entry(try await perform { try await api.getEntry(path: .init(diaryId: diaryID, entryId: entryID)).ok.body.json })
    }

    /// Edits an entry (author only); nil leaves a field as it is. `photoIDs` replaces the photos.
    public func editEntry(diaryID: String, entryID: String, content: String? = nil, question: String? = nil,
                          photoIDs: [String]? = nil) async throws -> Entry {
        Entry(try await perform {
            try await api.updateEntry(path: .init(diaryId: diaryID, entryId: entryID),
                                      body: .json(.init(content: content, question: question, photoIds: photoIDs))).ok.body.json
        })
    }

    /// Clears the question an entry answers (author only), leaving the rest as it is.
    public func clearQuestion(diaryID: String, entryID: String) async throws -> Entry {
        try await ClearQuestionMiddleware.$clearingQuestion.withValue(true) {
            try await editEntry(diaryID: diaryID, entryID: entryID)
        }
    }

    /// Deletes an entry (author only).
    public func deleteEntry(diaryID: String, entryID: String) async throws {
        _ = try await perform { try await api.deleteEntry(path: .init(diaryId: diaryID, entryId: entryID)).noContent }
    }

    /// Marks an entry read (既読); marking it again changes nothing.
    public func markRead(diaryID: String, entryID: String) async throws {
        _ = try await perform { try await api.markEntryRead(path: .init(diaryId: diaryID, entryId: entryID)).noContent }
    }

    /// Who has read an entry.
    public func reads(diaryID: String, entryID: String) async throws -> [ReadReceipt] {
        try await perform { try await api.listEntryReads(path: .init(diaryId: diaryID, entryId: entryID)).ok.body.json.reads }.map(ReadReceipt.init)
    }

    /// The days of a month (`YYYY-MM`) that have entries, in the caller's time zone.
    public func calendar(diaryID: String, month: String) async throws -> DiaryCalendar {
        DiaryCalendar(try await perform { try await api.getCalendar(path: .init(diaryId: diaryID), query: .init(month: month)).ok.body.json })
    }
}
