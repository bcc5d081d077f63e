public import Foundation

public struct Entry: Codable, Sendable, Equatable {
    public var id: UUID
    public var diaryId: UUID
    public var author: Author
    public var content: String
    public var question: String?
    /// The photos' signed URLs, in order, for clients that predate `photos`.
    public var images: [String]
    public var photos: [Photo]
    public var createdAt: Date
    public var updatedAt: Date
    public var readBy: [ReadReceipt]
    public var isMine: Bool

    public init(id: UUID, diaryId: UUID, author: Author, content: String, question: String?, images: [String], photos: [Photo] = [], createdAt: Date, updatedAt: Date, readBy: [ReadReceipt], isMine: Bool) {
        self.id = id
        self.diaryId = diaryId
        self.author = author
        self.content = content
        self.question = question
        self.images = images
        self.photos = photos
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.readBy = readBy
        self.isMine = isMine
    }

    /// In an anonymous diary, the alias; see `Member`.
    public struct Author: Codable, Sendable, Equatable {
        public var id: UUID
        public var displayName: String
        public var profileImageUrl: String?

        public init(id: UUID, displayName: String, profileImageUrl: String?) {
            self.id = id
            self.displayName = displayName
            self.profileImageUrl = profileImageUrl
        }
    }
}

public struct ReadReceipt: Codable, Sendable, Equatable {
    public var userId: UUID
    public var readAt: Date

    public init(userId: UUID, readAt: Date) {
        self.userId = userId
        self.readAt = readAt
    }
}

public struct EntryPage: Codable, Sendable, Equatable {
    public var entries: [Entry]
    public var nextCursor: String?
    /// The first page only: the change log's position at or before this read (see `Diary`).
    public var changesCursor: String?

    public init(entries: [Entry], nextCursor: String?, changesCursor: String? = nil) {
        self.entries = entries
        self.nextCursor = nextCursor
        self.changesCursor = changesCursor
    }
}

public struct ReadList: Codable, Sendable, Equatable {
    public var reads: [ReadReceipt]
    public init(reads: [ReadReceipt]) { self.reads = reads }
}

public struct CreateEntryRequest: Codable, Sendable {
    public var id: UUID?
    public var content: String
    public var question: String?
    /// Uploads of the author's (`POST /v1/photos`), in the order they are shown.
    public var photoIds: [UUID]?

    public init(id: UUID? = nil, content: String, question: String? = nil, photoIds: [UUID]? = nil) {
        self.id = id
        self.content = content
        self.question = question
        self.photoIds = photoIds
    }
}

public struct UpdateEntryRequest: Codable, Sendable {
    public var content: String?
    /// Absent (or `nil` with `clearsQuestion` false): unchanged.
    public var question: String?
    /// `"question": null` in the body: the entry no longer answers a question.
    public var clearsQuestion: Bool
    /// When present, the entry's photos become exactly these, in this order.
    public var photoIds: [UUID]?

    public init(content: String? = nil, question: String? = nil, clearsQuestion: Bool = false, photoIds: [UUID]? = nil) {
        self.content = content
        self.question = question
        self.clearsQuestion = clearsQuestion
        self.photoIds = photoIds
    }

    private enum CodingKeys: String, CodingKey { case content, question, photoIds }

    /// A key left out changes nothing; `question` sent as null clears it.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        content = try container.decodeIfPresent(String.self, forKey: .content)
        question = try container.decodeIfPresent(String.self, forKey: .question)
        clearsQuestion = container.contains(.question) && question == nil
        photoIds = try container.decodeIfPresent([UUID].self, forKey: .photoIds)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(content, forKey: .content)
        if clearsQuestion { try container.encodeNil(forKey: .question) } else { try container.encodeIfPresent(question, forKey: .question) }
        try container.encodeIfPresent(photoIds, forKey: .photoIds)
    }
}

public struct TodayQuestion: Codable, Sendable, Equatable {
    /// YYYY-MM-DD in the caller's time zone.
    public var date: String
    public var question: String

    public init(date: String, question: String) {
        self.date = date
        self.question = question
    }
}
