public import Foundation

/// One write an `EntryQueue` keeps until the server has it: a post, an edit or a deletion,
/// sent in the order queued, as the user who queued it.
public struct QueuedWrite: Codable, Sendable, Hashable, Identifiable {
    /// What the write does.
    public enum Action: Codable, Sendable, Hashable {
        /// Posts an entry (under the draft's id, which is also the write's).
        case post(EntryDraft)
        /// Edits an entry: nil leaves a field as it is; `photoIDs` replaces the photos.
        case edit(diaryID: String, entryID: String, content: String?, question: String?, photoIDs: [String]?)
        /// Deletes an entry.
        case delete(diaryID: String, entryID: String)
    }

    /// The write's own id: a post's is its entry's.
    public var id: UUID
    /// What it does.
    public var action: Action
    /// The user who queued it; nil on drafts queued by DiaryKit 1, which are never sent
    /// until claimed (`EntryQueue.unclaimed()`).
    public var userID: String?

    /// Creates a write; `EntryQueue`'s `enqueue` methods make these.
    public init(id: UUID = UUID(), action: Action, userID: String?) {
        self.id = id
        self.action = action
        self.userID = userID
    }

    /// The diary written to.
    public var diaryID: String {
        switch action {
        case .post(let draft): draft.diaryID
        case .edit(let diaryID, _, _, _, _), .delete(let diaryID, _): diaryID
        }
    }

    /// The post's draft, when the write is one.
    public var draft: EntryDraft? {
        if case .post(let draft) = action { return draft }
        return nil
    }

    /// The text written, for a post or an edit that sets it.
    public var content: String? {
        switch action {
        case .post(let draft): draft.content
        case .edit(_, _, let content, _, _): content
        case .delete: nil
        }
    }
}

extension QueuedWrite {
    /// Reads a queue file: DiaryKit 2's writes, or DiaryKit 1's drafts (posts naming no user).
    static func decodeQueue(_ data: Data) throws -> [QueuedWrite] {
        do {
            return try JSONDecoder().decode([QueuedWrite].self, from: data)
        } catch let current {
            guard let drafts = try? JSONDecoder().decode([EntryDraft].self, from: data) else { throw current }
            return drafts.map { QueuedWrite(id: $0.id, action: .post($0), userID: nil) }
        }
    }
}
