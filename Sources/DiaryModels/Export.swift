public import Foundation

/// `diary.json` in a diary's export: the diary and its members as the requester sees them.
public struct ExportedDiary: Codable, Sendable, Equatable {
    /// The archive's layout version; readers check it before anything else.
    public var format: Int
    public var diary: Diary
    public var exportedAt: Date
    /// The requester's time zone, which `localDate` in `entries.json` and the book use.
    public var timeZone: String
    public var entryCount: Int

    public init(format: Int = 1, diary: Diary, exportedAt: Date, timeZone: String, entryCount: Int) {
        self.format = format
        self.diary = diary
        self.exportedAt = exportedAt
        self.timeZone = timeZone
        self.entryCount = entryCount
    }
}

/// One element of `entries.json` (oldest first). Authors and readers are aliases in an
/// anonymous diary, exactly as the API shows them.
public struct ExportedEntry: Codable, Sendable, Equatable {
    public var id: UUID
    public var author: Entry.Author
    public var content: String
    public var question: String?
    /// Paths inside the archive, in order: `photos/<photoId>.<ext>`.
    public var photos: [String]
    public var readBy: [ReadReceipt]
    public var createdAt: Date
    public var updatedAt: Date
    /// YYYY-MM-DD of `createdAt` in the requester's time zone.
    public var localDate: String

    public init(id: UUID, author: Entry.Author, content: String, question: String?, photos: [String], readBy: [ReadReceipt], createdAt: Date, updatedAt: Date, localDate: String) {
        self.id = id
        self.author = author
        self.content = content
        self.question = question
        self.photos = photos
        self.readBy = readBy
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.localDate = localDate
    }
}

/// One element of a personal export's `entries.json`: an entry the requester wrote, in any
/// of their diaries. Others' entries belong to their authors and are not in it.
public struct PersonalExportedEntry: Codable, Sendable, Equatable {
    public var id: UUID
    public var diaryId: UUID
    public var content: String
    public var question: String?
    /// Paths inside the archive: `photos/<photoId>.<ext>`.
    public var photos: [String]
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: UUID, diaryId: UUID, content: String, question: String?, photos: [String], createdAt: Date, updatedAt: Date) {
        self.id = id
        self.diaryId = diaryId
        self.content = content
        self.question = question
        self.photos = photos
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// One element of a personal export's `reads.json`: an entry the requester has read.
public struct PersonalReadReceipt: Codable, Sendable, Equatable {
    public var diaryId: UUID
    public var entryId: UUID
    public var readAt: Date

    public init(diaryId: UUID, entryId: UUID, readAt: Date) {
        self.diaryId = diaryId
        self.entryId = entryId
        self.readAt = readAt
    }
}

/// One element of a personal export's `billing.json`: a purchase event RevenueCat sent about
/// the requester, and what it did to their plan.
public struct PersonalBillingEvent: Codable, Sendable, Equatable {
    public var eventId: String
    public var type: String
    public var productId: String?
    public var expiresAt: Date?
    public var eventAt: Date
    public var receivedAt: Date
    public var outcome: String

    public init(eventId: String, type: String, productId: String?, expiresAt: Date?, eventAt: Date, receivedAt: Date, outcome: String) {
        self.eventId = eventId
        self.type = type
        self.productId = productId
        self.expiresAt = expiresAt
        self.eventAt = eventAt
        self.receivedAt = receivedAt
        self.outcome = outcome
    }
}

/// A personal export's `profile.json`.
public struct PersonalProfile: Codable, Sendable, Equatable {
    public var format: Int
    public var me: Me
    public var devices: [Device]
    public var exportedAt: Date

    public init(format: Int = 1, me: Me, devices: [Device], exportedAt: Date) {
        self.format = format
        self.me = me
        self.devices = devices
        self.exportedAt = exportedAt
    }
}
