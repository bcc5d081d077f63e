public import Foundation

/// Where an `EntryQueue` keeps the writes not yet sent, so they survive the app being
/// killed. The app implements it over what it already has (a file, SQLite, Core Data,
/// SwiftData); `FileEntryQueueStore` is a ready one. Each method must be durable when it returns.
public protocol EntryQueueStore: Sendable {
    /// Every write not yet sent or rejected, in the order they were queued. Throws when the
    /// store cannot be read: never answers an empty queue for a store it could not read.
    func pendingWrites() async throws -> [QueuedWrite]
    /// Keeps a write at the end of the queue.
    func append(_ write: QueuedWrite) async throws
    /// Forgets a write: it was sent, or the server rejected it.
    func remove(id: UUID) async throws
    /// Replaces the write with the same id where it stands in the queue.
    func update(_ write: QueuedWrite) async throws
}

/// An `EntryQueueStore` in memory, for previews and tests: it survives a new client or
/// queue, not the process.
public actor InMemoryEntryQueueStore: EntryQueueStore {
    private var writes: [QueuedWrite] = []

    /// Creates an empty store.
    public init() {}

    /// The writes kept, oldest first.
    public func pendingWrites() -> [QueuedWrite] { writes }

    /// Keeps a write at the end.
    public func append(_ write: QueuedWrite) { writes.append(write) }

    /// Forgets a write.
    public func remove(id: UUID) { writes.removeAll { $0.id == id } }

    /// Replaces the write with the same id.
    public func update(_ write: QueuedWrite) {
        if let index = writes.firstIndex(where: { $0.id == write.id }) { writes[index] = write }
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

    /// The writes in the file, oldest first (DiaryKit 1's files too); none when there is no
    /// file. A file that cannot be read or decoded throws: it is never taken for an empty queue.
    public func pendingWrites() throws -> [QueuedWrite] {
        guard FileManager.default.fileExists(atPath: fileURL.path) else { return [] }
        return try QueuedWrite.decodeQueue(Data(contentsOf: fileURL))
    }

    /// Adds a write at the end of the file.
    public func append(_ write: QueuedWrite) throws {
        try save(pendingWrites() + [write])
    }

    /// Removes a write from the file.
    public func remove(id: UUID) throws {
        try save(pendingWrites().filter { $0.id != id })
    }

    /// Replaces the write with the same id where it stands.
    public func update(_ write: QueuedWrite) throws {
        try save(pendingWrites().map { $0.id == write.id ? write : $0 })
    }

    private func save(_ writes: [QueuedWrite]) throws {
        try JSONEncoder().encode(writes).write(to: fileURL, options: .atomic)
    }
}
