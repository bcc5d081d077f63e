import DiaryAPI
public import Foundation

// DiaryKit's own types: what the app sees of the contract's schemas. Each is made from the
// generated one (`init(_:)`, internal), so the generated layer never reaches the app: values
// the contract keeps open (a plan, a role, a diary type added later) are `.unknown`, never a
// pair of optionals.

/// A value the server may extend: the known cases, and `.unknown` with the text it sent.
public protocol OpenValue: Sendable, Hashable {
    /// The text the server sent.
    var rawValue: String { get }
}

/// The signed-in user: profile, settings and plan.
public struct Me: Sendable, Hashable, Identifiable {
    public var id: String
    public var displayName: String
    public var profileImageURL: String?
    public var settings: Settings
    /// An IANA time zone, such as `Asia/Tokyo`.
    public var timeZone: String
    public var isPremium: Bool
    public var premiumExpiresAt: Date?
    public var plan: Plan
    public var createdAt: Date

    init(_ me: Components.Schemas.Me) {
        id = me.id
        displayName = me.displayName
        profileImageURL = me.profileImageUrl
        settings = Settings(me.settings)
        timeZone = me.timeZone
        isPremium = me.isPremium
        premiumExpiresAt = me.premiumExpiresAt
        plan = Plan(rawValue: me.plan.value1?.rawValue ?? me.plan.value2 ?? "")
        createdAt = me.createdAt
    }
}

/// A user's plan.
public enum Plan: OpenValue {
    case free, premium, couple
    case unknown(String)

    public init(rawValue: String) {
        switch rawValue {
        case "free": self = .free
        case "premium": self = .premium
        case "couple": self = .couple
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .free: "free"
        case .premium: "premium"
        case .couple: "couple"
        case .unknown(let value): value
        }
    }
}

/// The user's notification settings.
public struct Settings: Sendable, Hashable {
    public var notificationNewEntry: Bool
    public var notificationReminder: Bool
    /// `HH:mm`, in the user's time zone.
    public var reminderTime: String

    init(_ settings: Components.Schemas.Settings) {
        notificationNewEntry = settings.notificationNewEntry
        notificationReminder = settings.notificationReminder
        reminderTime = settings.reminderTime
    }
}

/// A diary's kind, which sets its member cap: couple 2, family 10, friends 10, anonymous 2.
public enum DiaryType: OpenValue {
    case couple, family, friends, anonymous
    /// A kind added after this version of DiaryKit; it cannot be created from here.
    case unknown(String)

    public init(rawValue: String) {
        switch rawValue {
        case "couple": self = .couple
        case "family": self = .family
        case "friends": self = .friends
        case "anonymous": self = .anonymous
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .couple: "couple"
        case .family: "family"
        case .friends: "friends"
        case .anonymous: "anonymous"
        case .unknown(let value): value
        }
    }
}

/// A member's role in a diary.
public enum Role: OpenValue {
    case owner, member
    case unknown(String)

    public init(rawValue: String) {
        switch rawValue {
        case "owner": self = .owner
        case "member": self = .member
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .owner: "owner"
        case .member: "member"
        case .unknown(let value): value
        }
    }

    init(_ role: Components.Schemas.Role) { self.init(rawValue: role.value1?.rawValue ?? role.value2 ?? "") }
}

/// A diary as the caller sees it: members, invite code, unread count.
public struct Diary: Sendable, Hashable, Identifiable {
    public var id: String
    public var name: String
    public var type: DiaryType
    public var maxMembers: Int
    public var inviteCode: String
    /// The link to share (LINE, Messages): it opens the app, or a page that does; a join
    /// takes it as well as the code.
    public var inviteURL: String
    /// The caller's role.
    public var role: Role
    public var memberCount: Int
    public var members: [Member]
    public var createdAt: Date
    public var lastEntryAt: Date?
    public var unreadCount: Int
    /// Where to follow the diary's changes from (delta sync, `catchUp`).
    public var changesCursor: String?

    init(_ diary: Components.Schemas.Diary) {
        id = diary.id
        name = diary.name
        type = DiaryType(rawValue: diary._type.value1?.rawValue ?? diary._type.value2 ?? "")
        maxMembers = diary.maxMembers
        inviteCode = diary.inviteCode
        inviteURL = diary.inviteUrl
        role = Role(diary.role)
        memberCount = diary.memberCount
        members = diary.members.map(Member.init)
        createdAt = diary.createdAt
        lastEntryAt = diary.lastEntryAt
        unreadCount = diary.unreadCount
        changesCursor = diary.changesCursor
    }
}

/// A member of a diary. In an anonymous diary, every member but the caller has an alias.
public struct Member: Sendable, Hashable {
    public var userID: String
    public var displayName: String
    public var profileImageURL: String?
    public var role: Role
    public var joinedAt: Date

    init(_ member: Components.Schemas.Member) {
        userID = member.userId
        displayName = member.displayName
        profileImageURL = member.profileImageUrl
        role = Role(member.role)
        joinedAt = member.joinedAt
    }
}

/// An entry as the caller sees it.
public struct Entry: Sendable, Hashable, Identifiable {
    /// Who wrote it.
    public struct Author: Sendable, Hashable {
        public var id: String
        public var displayName: String
        public var profileImageURL: String?
    }

    public var id: String
    public var diaryID: String
    public var author: Author
    public var content: String
    /// The day's question it answers, if any.
    public var question: String?
    public var photos: [Photo]
    public var createdAt: Date
    public var updatedAt: Date
    public var readBy: [ReadReceipt]
    /// Whether the caller wrote it.
    public var isMine: Bool

    init(_ entry: Components.Schemas.Entry) {
        id = entry.id
        diaryID = entry.diaryId
        author = Author(id: entry.author.id, displayName: entry.author.displayName, profileImageURL: entry.author.profileImageUrl)
        content = entry.content
        question = entry.question
        photos = (entry.photos ?? []).map(Photo.init)
        createdAt = entry.createdAt
        updatedAt = entry.updatedAt
        readBy = entry.readBy.map(ReadReceipt.init)
        isMine = entry.isMine
    }
}

/// A page of a timeline, newest first.
public struct EntryPage: Sendable, Hashable {
    public var entries: [Entry]
    /// Pass as `before` for the next, older page; nil on the last.
    public var nextCursor: String?
    /// On the first page: where to follow the diary's changes from.
    public var changesCursor: String?

    init(_ page: Components.Schemas.EntryPage) {
        entries = page.entries.map(Entry.init)
        nextCursor = page.nextCursor
        changesCursor = page.changesCursor
    }
}

/// Who read an entry (既読), and when.
public struct ReadReceipt: Sendable, Hashable {
    public var userID: String
    public var readAt: Date

    init(_ receipt: Components.Schemas.ReadReceipt) {
        userID = receipt.userId
        readAt = receipt.readAt
    }
}

/// A stored photo, with its signed URL and when that URL expires.
public struct Photo: Sendable, Hashable, Identifiable {
    public var id: String
    /// The image's format; nil for one this version of DiaryKit does not know (`contentType`).
    public var format: PhotoFormat?
    /// The media type the server gave.
    public var contentType: String
    /// Its size in bytes.
    public var bytes: Int
    public var width: Int
    public var height: Int
    /// Where to download it (`downloadPhoto`), until `urlExpiresAt`.
    public var url: String
    public var urlExpiresAt: Date

    init(_ photo: Components.Schemas.Photo) {
        id = photo.id
        contentType = photo.contentType.value1?.rawValue ?? photo.contentType.value2 ?? ""
        format = PhotoFormat(rawValue: contentType)
        bytes = photo.bytes
        width = photo.width
        height = photo.height
        url = photo.url
        urlExpiresAt = photo.urlExpiresAt
    }
}

/// A page of delta sync.
public struct ChangeList: Sendable {
    /// The changes, oldest first; those this version of DiaryKit cannot read are `.unknown`.
    public var changes: [DiaryChange]
    /// The cursor after the last change.
    public var nextCursor: String
    /// Whether more changes follow.
    public var hasMore: Bool

    init(_ list: Components.Schemas.ChangeList) {
        changes = list.changes.compactMap(DiaryChange.init)
        nextCursor = list.nextCursor
        hasMore = list.hasMore
    }
}

/// Which of Apple's push hosts a device token belongs to.
public enum PushEnvironment: OpenValue {
    case sandbox, production
    case unknown(String)

    public init(rawValue: String) {
        switch rawValue {
        case "sandbox": self = .sandbox
        case "production": self = .production
        default: self = .unknown(rawValue)
        }
    }

    public var rawValue: String {
        switch self {
        case .sandbox: "sandbox"
        case .production: "production"
        case .unknown(let value): value
        }
    }
}

/// A device registered for push notifications.
public struct Device: Sendable, Hashable {
    /// The APNs token, in hex.
    public var token: String
    public var environment: PushEnvironment
    public var createdAt: Date

    init(_ device: Components.Schemas.Device) {
        token = device.token
        environment = PushEnvironment(rawValue: device.environment.value1?.rawValue ?? device.environment.value2 ?? "")
        createdAt = device.createdAt
    }
}

/// The service's state: maintenance, the minimum app version, notices.
public struct ServiceStatus: Sendable, Hashable {
    /// A notice to show: maintenance planned, terms changed, …
    public struct Notice: Sendable, Hashable, Identifiable {
        public var id: String
        /// Its kind, as the server names it.
        public var kind: String
        public var title: String
        public var body: String
        public var publishedAt: Date
        /// The day it takes effect (`YYYY-MM-DD`), if any.
        public var effectiveOn: String?
    }

    public var maintenance: Bool
    public var minimumAppVersion: String?
    public var notices: [Notice]

    init(_ status: Components.Schemas.ServiceStatus) {
        maintenance = status.maintenance
        minimumAppVersion = status.minimumAppVersion
        notices = status.notices.map { notice in
            Notice(id: notice.id, kind: notice.kind.value1?.rawValue ?? notice.kind.value2 ?? "", title: notice.title,
                   body: notice.body, publishedAt: notice.publishedAt, effectiveOn: notice.effectiveOn)
        }
    }
}

/// The question of the day.
public struct TodayQuestion: Sendable, Hashable {
    /// The day, `YYYY-MM-DD`, in the user's time zone.
    public var date: String
    public var question: String

    init(_ question: Components.Schemas.TodayQuestion) {
        date = question.date
        self.question = question.question
    }
}

/// The days of a month that have entries.
public struct DiaryCalendar: Sendable, Hashable {
    /// One day with entries.
    public struct Day: Sendable, Hashable {
        /// `YYYY-MM-DD`.
        public var date: String
        /// How many entries.
        public var entries: Int
        /// Who wrote them.
        public var authorIDs: [String]
    }

    /// `YYYY-MM`.
    public var month: String
    public var days: [Day]

    init(_ calendar: Components.Schemas.DiaryCalendar) {
        month = calendar.month
        days = calendar.days.map { Day(date: $0.date, entries: $0.entries, authorIDs: $0.authorIds) }
    }
}

/// What a push notification carries.
public struct PushNotification: Sendable, Hashable {
    public var title: String?
    public var body: String?
    /// The diary, for a new entry.
    public var diaryID: String?
    /// The entry, for a new entry.
    public var entryID: String?

    init(_ notification: Components.Schemas.PushNotification) {
        title = notification.aps.alert?.title
        body = notification.aps.alert?.body
        diaryID = notification.diaryId
        entryID = notification.entryId
    }
}
