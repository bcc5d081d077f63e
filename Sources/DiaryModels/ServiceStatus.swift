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

    public init(lastBackupAt: Date?, lastVerifiedAt: Date?, backupVerified: Bool, entriesProtected: Int) {
        self.lastBackupAt = lastBackupAt
        self.lastVerifiedAt = lastVerifiedAt
        self.backupVerified = backupVerified
        self.entriesProtected = entriesProtected
    }

    private enum CodingKeys: String, CodingKey { case lastBackupAt, lastVerifiedAt, backupVerified, entriesProtected }

    /// The times are written as null, not left out: the screen shows "off" for them.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(lastBackupAt, forKey: .lastBackupAt)
        try container.encode(lastVerifiedAt, forKey: .lastVerifiedAt)
        try container.encode(backupVerified, forKey: .backupVerified)
        try container.encode(entriesProtected, forKey: .entriesProtected)
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
