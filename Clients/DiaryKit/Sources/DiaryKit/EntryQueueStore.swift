public import Foundation

/// Where an `EntryQueue` keeps the entries not yet sent, so they survive the app being
/// killed. The app implements it over what it already has (a file, SQLite, Core Data,
/// SwiftData); `FileEntryQueueStore` is a ready one. Each method must be durable when it returns.
public protocol EntryQueueStore: Sendable {
    /// Every draft not yet sent or rejected, in the order they were queued.
    func pendingDrafts() async throws -> [EntryDraft]
    /// Keeps a draft at the end of the queue.
    func append(_ draft: EntryDraft) async throws
    /// Forgets a draft: it was sent, or the server rejected it.
    func remove(id: UUID) async throws
    /// Replaces the draft with the same id where it stands in the queue.
    func update(_ draft: EntryDraft) async throws
}

/// An `EntryQueueStore` in memory, for previews and tests: it survives a new client or
/// queue, not the process.
public actor InMemoryEntryQueueStore: EntryQueueStore {
    private var drafts: [EntryDraft] = []

    /// Creates an empty store.
    public init() {}

    /// The drafts kept, oldest first.
    public func pendingDrafts() -> [EntryDraft] { drafts }

    /// Keeps a draft at the end.
    public func append(_ draft: EntryDraft) { drafts.append(draft) }

    /// Forgets a draft.
    public func remove(id: UUID) { drafts.removeAll { $0.id == id } }

    /// Replaces the draft with the same id.
    public func update(_ draft: EntryDraft) {
        if let index = drafts.firstIndex(where: { $0.id == draft.id }) { drafts[index] = draft }
    }
}

/// An `EntryQueueStore` in one JSON file, rewritten atomically on every change, so a crash
/// leaves the old list or the new one, never half of either.
public actor FileEntryQueueStore: EntryQueueStore {
    /// The file the drafts are kept in.
    public let fileURL: URL

    /// Creates a store over `fileURL` (created on the first append).
    public init(fileURL: URL) {
        self.fileURL = fileURL
    }

    /// The drafts in the file, oldest first; none when there is no file. A file that cannot
    /// be read or decoded throws: it is never taken for an empty queue.
    public func pendingDrafts() throws -> [EntryDraft] {
        guard FileManager.default.fileExists(atPath: fileURL.path) else { return [] }
        return try JSONDecoder().decode([EntryDraft].self, from: Data(contentsOf: fileURL))
    }

    /// Adds a draft at the end of the file.
    public func append(_ draft: EntryDraft) throws {
        try write(pendingDrafts() + [draft])
    }

    /// Removes a draft from the file.
    public func remove(id: UUID) throws {
        try write(pendingDrafts().filter { $0.id != id })
    }

    /// Replaces the draft with the same id where it stands.
    public func update(_ draft: EntryDraft) throws {
        try write(pendingDrafts().map { $0.id == draft.id ? draft : $0 })
    }

    private func write(_ drafts: [EntryDraft]) throws {
        try JSONEncoder().encode(drafts).write(to: fileURL, options: .atomic)
    }
}
