import DiaryAPI
public import Foundation

/// One change in a diary, typed by its `type`: the contract's `ChangeEvent`, whose `data` is
/// one of six shapes, read as the one its type names. Apply changes as upserts: each is
/// idempotent, and the same change may arrive twice (socket and delta sync).
public struct DiaryChange: Sendable {
    /// The change's cursor: resume after it.
    public var cursor: String
    /// The diary changed.
    public var diaryID: String
    /// When it happened.
    public var at: Date
    /// What happened.
    public var kind: Kind

    /// What happened, with its data.
    public enum Kind: Sendable {
        /// An entry was written.
        case entryCreated(Entry)
        /// An entry was edited.
        case entryUpdated(Entry)
        /// An entry was deleted: its id.
        case entryDeleted(entryID: String)
        /// A member read an entry for the first time.
        case entryRead(entryID: String, userID: String, readAt: Date)
        /// A member joined.
        case memberJoined(Member)
        /// A member left or was removed; the caller's own id means they are out of the diary.
        case memberLeft(userID: String)
        /// The diary changed (a rename).
        case diaryUpdated(Diary)
        /// A change this version of DiaryKit does not know; ignore it, or update the app.
        case unknown(type: String)
    }

    /// Types the contract's event, or nil when its data does not have the shape its type says.
    init?(_ event: Components.Schemas.ChangeEvent) {
        cursor = event.id
        diaryID = event.diaryId
        at = event.at
        let data = event.data
        let type = event._type.value1?.rawValue ?? event._type.value2 ?? ""
        switch type {
        case "entry.created": guard let entry = data.value1 else { return nil }; kind = .entryCreated(Entry(entry))
        case "entry.updated": guard let entry = data.value1 else { return nil }; kind = .entryUpdated(Entry(entry))
        case "entry.deleted": guard let deleted = data.value4 else { return nil }; kind = .entryDeleted(entryID: deleted.id)
        case "entry.read":
            guard let read = data.value5 else { return nil }
            kind = .entryRead(entryID: read.entryId, userID: read.userId, readAt: read.readAt)
        case "member.joined": guard let member = data.value2 else { return nil }; kind = .memberJoined(Member(member))
        case "member.left": guard let left = data.value6 else { return nil }; kind = .memberLeft(userID: left.userId)
        case "diary.updated": guard let diary = data.value3 else { return nil }; kind = .diaryUpdated(Diary(diary))
        default: kind = .unknown(type: type)
        }
    }
}

/// One step of catching up on one diary.
public enum CatchUp: Sendable {
    /// One page of the changes since the cursor given, oldest first, and the cursor after it.
    case changes([DiaryChange], cursor: String)
    /// The cursor was too old or unknown (`resync_required`): here is the diary and the first
    /// page of its timeline, reloaded; replace what is held, and follow `cursor` from now on.
    /// Always the last step.
    case reloaded(Diary, EntryPage, cursor: String)
}

extension DiaryClient {
    /// One page of delta sync: the diary's changes after `since`, oldest first.
    public func changes(diaryID: String, since: String, limit: Int = 100) async throws -> ChangeList {
        ChangeList(try await perform {
            try await api.listChanges(path: .init(diaryId: diaryID), query: .init(since: since, limit: limit)).ok.body.json
        })
    }

    /// Brings one diary up to date from `cursor`, a page at a time as the sequence is read (so
    /// a diary far behind never sits in memory whole): every change since, page after page;
    /// or, when the server no longer has changes that old (`resync_required`), the diary and
    /// its first timeline page reloaded, with the new cursor to follow. Apply each page and
    /// keep its cursor before reading the next.
    public func catchUp(diaryID: String, from cursor: String, pageSize: Int = 500) -> AsyncThrowingStream<CatchUp, any Error> {
        let position = CatchUpPosition(cursor)
        return AsyncThrowingStream {
            guard let since = await position.next() else { return nil }
            do {
                let page = try await self.changes(diaryID: diaryID, since: since, limit: pageSize)
                await position.advance(to: page.nextCursor, more: page.hasMore)
                return .changes(page.changes, cursor: page.nextCursor)
            } catch DiaryError.problem(let problem) where problem.code == .resyncRequired {
                await position.advance(to: since, more: false)
                let page = try await self.timeline(diaryID: diaryID)
                let diary = try await self.diary(id: diaryID)
                // The timeline page's cursor is older than the diary's: following it replays, at
                // worst, changes already reflected, which are idempotent.
                return .reloaded(diary, page, cursor: page.changesCursor ?? diary.changesCursor ?? since)
            }
        }
    }
}

/// Where a catch-up stands: the cursor to read from next, or done.
private actor CatchUpPosition {
    private var cursor: String?
    init(_ cursor: String) { self.cursor = cursor }
    func next() -> String? { cursor }
    func advance(to next: String, more: Bool) { cursor = more ? next : nil }
}
