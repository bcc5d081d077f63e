public import Foundation

public enum DiaryType: String, Codable, Sendable, CaseIterable {
    case couple, family, friends, anonymous

    public var maxMembers: Int {
        switch self {
        case .couple, .anonymous: 2
        case .family, .friends: 10
        }
    }
}

public enum MemberRole: String, Codable, Sendable {
    case owner, member
}

public struct Diary: Codable, Sendable, Equatable {
    public var id: UUID
    public var name: String
    public var type: DiaryType
    public var maxMembers: Int
    public var inviteCode: String
    /// `<PUBLIC_URL>/i/<inviteCode>`: the link to share, which opens the app.
    public var inviteUrl: String
    /// The caller's role in this diary.
    public var role: MemberRole
    public var memberCount: Int
    public var members: [Member]
    public var createdAt: Date
    public var lastEntryAt: Date?
    /// Entries by others that the caller has not read.
    public var unreadCount: Int
    /// `GET /v1/diaries/{diaryId}` only: the change log's position at or before this read.
    /// Following the changes from here (socket `since`, or delta sync) misses nothing.
    public var changesCursor: String?

    public init(id: UUID, name: String, type: DiaryType, inviteCode: String, inviteUrl: String, role: MemberRole, memberCount: Int, members: [Member], createdAt: Date, lastEntryAt: Date?, unreadCount: Int) {
        self.id = id
        self.name = name
        self.type = type
        self.maxMembers = type.maxMembers
        self.inviteCode = inviteCode
        self.inviteUrl = inviteUrl
        self.role = role
        self.memberCount = memberCount
        self.members = members
        self.createdAt = createdAt
        self.lastEntryAt = lastEntryAt
        self.unreadCount = unreadCount
    }
}

/// A member as others see them. In an anonymous diary `userId` is a per-diary alias and
/// `displayName` a label such as 匿名1; the real id, name and image never appear.
public struct Member: Codable, Sendable, Equatable {
    public var userId: UUID
    public var displayName: String
    public var profileImageUrl: String?
    public var role: MemberRole
    public var joinedAt: Date

    public init(userId: UUID, displayName: String, profileImageUrl: String?, role: MemberRole, joinedAt: Date) {
        self.userId = userId
        self.displayName = displayName
        self.profileImageUrl = profileImageUrl
        self.role = role
        self.joinedAt = joinedAt
    }
}

public struct DiaryList: Codable, Sendable, Equatable {
    public var diaries: [Diary]
    public init(diaries: [Diary]) { self.diaries = diaries }
}

public struct MemberList: Codable, Sendable, Equatable {
    public var members: [Member]
    public init(members: [Member]) { self.members = members }
}

public struct CreateDiaryRequest: Codable, Sendable {
    /// Chosen by the client, so that a retry answers the diary it made.
    public var id: UUID?
    public var name: String
    public var type: DiaryType
    public init(id: UUID? = nil, name: String, type: DiaryType) {
        self.id = id
        self.name = name
        self.type = type
    }
}

public struct UpdateDiaryRequest: Codable, Sendable {
    public var name: String
    public init(name: String) { self.name = name }
}

public struct JoinDiaryRequest: Codable, Sendable {
    /// The code as typed, or the diary's invite link (`inviteUrl`).
    public var inviteCode: String
    public init(inviteCode: String) { self.inviteCode = inviteCode }
}

public struct InviteCodeResponse: Codable, Sendable, Equatable {
    public var inviteCode: String
    public var inviteUrl: String
    public init(inviteCode: String, inviteUrl: String) {
        self.inviteCode = inviteCode
        self.inviteUrl = inviteUrl
    }
}

/// `GET /v1/invites/{code}`: what someone about to join sees of the diary a code opens. Never
/// its name or who is in it: a code travels further than the person it was sent to.
public struct InvitePreview: Codable, Sendable, Equatable {
    public var type: DiaryType
    public var maxMembers: Int
    public var memberCount: Int
    /// A join would answer 409 diary_full.
    public var full: Bool

    public init(type: DiaryType, memberCount: Int) {
        self.type = type
        self.maxMembers = type.maxMembers
        self.memberCount = memberCount
        self.full = memberCount >= type.maxMembers
    }
}
