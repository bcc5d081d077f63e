public import Foundation

/// One change from a diary's change log, as one member sees it: on the realtime socket and
/// in delta sync alike. `id` is the change's cursor: resuming after it misses nothing.
public struct ChangeEvent: Codable, Sendable, Equatable {
    public var id: String
    public var type: ChangeType
    public var diaryId: UUID
    public var at: Date
    public var data: ChangeData

    public init(id: String, type: ChangeType, diaryId: UUID, at: Date, data: ChangeData) {
        self.id = id
        self.type = type
        self.diaryId = diaryId
        self.at = at
        self.data = data
    }

    enum CodingKeys: String, CodingKey {
        case id, type, diaryId, at, data
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        type = try container.decode(ChangeType.self, forKey: .type)
        diaryId = try container.decode(UUID.self, forKey: .diaryId)
        at = try container.decode(Date.self, forKey: .at)
        switch type {
        case .entryCreated, .entryUpdated: data = .entry(try container.decode(Entry.self, forKey: .data))
        case .entryDeleted: data = .entryDeleted(try container.decode(DeletedEntry.self, forKey: .data))
        case .entryRead: data = .entryRead(try container.decode(EntryRead.self, forKey: .data))
        case .memberJoined: data = .member(try container.decode(Member.self, forKey: .data))
        case .memberLeft: data = .memberLeft(try container.decode(DepartedMember.self, forKey: .data))
        case .diaryUpdated: data = .diary(try container.decode(Diary.self, forKey: .data))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(type, forKey: .type)
        try container.encode(diaryId, forKey: .diaryId)
        try container.encode(at, forKey: .at)
        switch data {
        case .entry(let entry): try container.encode(entry, forKey: .data)
        case .entryDeleted(let deleted): try container.encode(deleted, forKey: .data)
        case .entryRead(let read): try container.encode(read, forKey: .data)
        case .member(let member): try container.encode(member, forKey: .data)
        case .memberLeft(let departed): try container.encode(departed, forKey: .data)
        case .diary(let diary): try container.encode(diary, forKey: .data)
        }
    }
}

public enum ChangeType: String, Codable, Sendable, CaseIterable {
    case entryCreated = "entry.created"
    case entryUpdated = "entry.updated"
    case entryDeleted = "entry.deleted"
    case entryRead = "entry.read"
    case memberJoined = "member.joined"
    case memberLeft = "member.left"
    case diaryUpdated = "diary.updated"
}

/// What the REST API would answer about the change's subject, seen by the receiver.
public enum ChangeData: Sendable, Equatable {
    case entry(Entry)
    case entryDeleted(DeletedEntry)
    case entryRead(EntryRead)
    case member(Member)
    case memberLeft(DepartedMember)
    case diary(Diary)
}

public struct DeletedEntry: Codable, Sendable, Equatable {
    public var id: UUID
    public init(id: UUID) { self.id = id }
}

/// `userId` is an alias in an anonymous diary, as in `Member`.
public struct EntryRead: Codable, Sendable, Equatable {
    public var entryId: UUID
    public var userId: UUID
    public var readAt: Date

    public init(entryId: UUID, userId: UUID, readAt: Date) {
        self.entryId = entryId
        self.userId = userId
        self.readAt = readAt
    }
}

public struct DepartedMember: Codable, Sendable, Equatable {
    public var userId: UUID
    public init(userId: UUID) { self.userId = userId }
}

/// A page of delta sync: `GET /v1/diaries/{diaryId}/changes`.
public struct ChangeList: Codable, Sendable, Equatable {
    public var changes: [ChangeEvent]
    public var nextCursor: String
    public var hasMore: Bool

    public init(changes: [ChangeEvent], nextCursor: String, hasMore: Bool) {
        self.changes = changes
        self.nextCursor = nextCursor
        self.hasMore = hasMore
    }
}
