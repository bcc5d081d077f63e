public import Foundation

/// `GET /v1/service-status`, read by the apps before anything else, without signing in.
public struct ServiceStatus: Codable, Sendable, Equatable {
    /// Writes are refused (503 `maintenance`); reads, exports and sign-in keep working.
    public var maintenance: Bool
    /// Apps older than this get 426 `upgrade_required` (they send `X-App-Version`).
    public var minimumAppVersion: String?
    /// Newest first.
    public var notices: [ServiceNotice]

    public init(maintenance: Bool, minimumAppVersion: String?, notices: [ServiceNotice]) {
        self.maintenance = maintenance
        self.minimumAppVersion = minimumAppVersion
        self.notices = notices
    }
}

public enum ServiceNoticeKind: String, Codable, Sendable, CaseIterable {
    case info, shutdown
}

public struct ServiceNotice: Codable, Sendable, Equatable {
    public var id: UUID
    public var kind: ServiceNoticeKind
    public var title: String
    public var body: String
    public var publishedAt: Date
    /// A shutdown's date (YYYY-MM-DD, UTC): at least 183 days after `publishedAt`.
    public var effectiveOn: String?

    public init(id: UUID, kind: ServiceNoticeKind, title: String, body: String, publishedAt: Date, effectiveOn: String?) {
        self.id = id
        self.kind = kind
        self.title = title
        self.body = body
        self.publishedAt = publishedAt
        self.effectiveOn = effectiveOn
    }
}

/// `GET /v1/data-safety`: what the Data Safety Center shows.
public struct DataSafety: Codable, Sendable, Equatable {
    /// Null while backups are off.
    public var lastBackupAt: Date?
    public var lastVerifiedAt: Date?
    /// The newest backup was restored and matched its snapshot.
    public var backupVerified: Bool
    /// Entries in the caller's diaries.
    public var entriesProtected: Int
    /// How long a diary the caller left stays theirs to export from, and a closed one to restore.
    public var departureWindowDays: Int
    /// The diaries the caller left whose window is open, newest departure first.
    public var departures: [Departure]

    public init(lastBackupAt: Date?, lastVerifiedAt: Date?, backupVerified: Bool, entriesProtected: Int, departureWindowDays: Int = 30, departures: [Departure] = []) {
        self.lastBackupAt = lastBackupAt
        self.lastVerifiedAt = lastVerifiedAt
        self.backupVerified = backupVerified
        self.entriesProtected = entriesProtected
        self.departureWindowDays = departureWindowDays
        self.departures = departures
    }

    private enum CodingKeys: String, CodingKey { case lastBackupAt, lastVerifiedAt, backupVerified, entriesProtected, departureWindowDays, departures }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            lastBackupAt: try container.decodeIfPresent(Date.self, forKey: .lastBackupAt),
            lastVerifiedAt: try container.decodeIfPresent(Date.self, forKey: .lastVerifiedAt),
            backupVerified: try container.decode(Bool.self, forKey: .backupVerified),
            entriesProtected: try container.decode(Int.self, forKey: .entriesProtected),
            departureWindowDays: try container.decodeIfPresent(Int.self, forKey: .departureWindowDays) ?? 30,
            departures: try container.decodeIfPresent([Departure].self, forKey: .departures) ?? [])
    }

    /// The times are written as null, not left out: the screen shows "off" for them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(lastBackupAt, forKey: .lastBackupAt)
        try container.encode(lastVerifiedAt, forKey: .lastVerifiedAt)
        try container.encode(backupVerified, forKey: .backupVerified)
        try container.encode(entriesProtected, forKey: .entriesProtected)
        try container.encode(departureWindowDays, forKey: .departureWindowDays)
        try container.encode(departures, forKey: .departures)
    }
}

/// `GET /v1/diaries/{diaryId}/calendar?month=YYYY-MM`: the days with entries.
public struct DiaryCalendar: Codable, Sendable, Equatable {
    public var month: String
    public var days: [CalendarDay]

    public init(month: String, days: [CalendarDay]) {
        self.month = month
        self.days = days
    }
}

public struct CalendarDay: Codable, Sendable, Equatable {
    /// YYYY-MM-DD in the caller's time zone.
    public var date: String
    public var entries: Int
    /// Aliases in an anonymous diary, as everywhere else.
    public var authorIds: [UUID]

    public init(date: String, entries: Int, authorIds: [UUID]) {
        self.date = date
        self.entries = entries
        self.authorIds = authorIds
    }
}

/// A diary the caller left, while it is still theirs: they may export their own entries of
/// it until `keptUntil`, and, when it is closed (its last member left), restore it.
public struct Departure: Codable, Sendable, Equatable {
    public var diaryId: UUID
    /// The name it had when they left.
    public var name: String
    public var type: DiaryType
    public var leftAt: Date
    /// Set when nobody is left in it: it is kept, unseen, until `keptUntil`, then deleted.
    public var closedAt: Date?
    public var keptUntil: Date
    /// Their own entries in it, which their personal export carries.
    public var ownEntries: Int
    /// Closed, and theirs to restore until `keptUntil`: they left it, rather than its owner removing them.
    public var restorable: Bool

    public init(diaryId: UUID, name: String, type: DiaryType, leftAt: Date, closedAt: Date?, keptUntil: Date, ownEntries: Int, restorable: Bool) {
        self.diaryId = diaryId
        self.name = name
        self.type = type
        self.leftAt = leftAt
        self.closedAt = closedAt
        self.keptUntil = keptUntil
        self.ownEntries = ownEntries
        self.restorable = restorable
    }
}
