public import Foundation

/// The caller's own profile: the only place a user's settings and premium status appear.
public struct Me: Codable, Sendable, Equatable {
    public var id: UUID
    public var displayName: String
    public var profileImageUrl: String?
    public var settings: UserSettings
    public var timeZone: String
    public var isPremium: Bool
    /// The caller's own plan's end; nil when they have none, or it never ends (a lifetime purchase).
    public var premiumExpiresAt: Date?
    public var plan: Plan
    public var createdAt: Date

    /// `couple`: the couple plan, bought by the caller or by their partner in a couple diary.
    public enum Plan: String, Codable, Sendable, CaseIterable {
        case free, premium, couple
    }

    public init(
        id: UUID, displayName: String, profileImageUrl: String?, settings: UserSettings, timeZone: String, isPremium: Bool, premiumExpiresAt: Date?,
        plan: Plan = .free, createdAt: Date
    ) {
        self.id = id
        self.displayName = displayName
        self.profileImageUrl = profileImageUrl
        self.settings = settings
        self.timeZone = timeZone
        self.isPremium = isPremium
        self.premiumExpiresAt = premiumExpiresAt
        self.plan = plan
        self.createdAt = createdAt
    }
}

public struct UserSettings: Codable, Sendable, Equatable {
    public var notificationNewEntry: Bool
    public var notificationReminder: Bool
    /// "HH:MM", in the user's time zone.
    public var reminderTime: String

    public init(notificationNewEntry: Bool = true, notificationReminder: Bool = true, reminderTime: String = "21:00") {
        self.notificationNewEntry = notificationNewEntry
        self.notificationReminder = notificationReminder
        self.reminderTime = reminderTime
    }
}

/// `PATCH /v1/me`: every field optional; absent means unchanged.
public struct UpdateMeRequest: Codable, Sendable {
    public var displayName: String?
    public var profileImageUrl: String?
    public var settings: SettingsPatch?
    public var timeZone: String?

    public init(displayName: String? = nil, profileImageUrl: String? = nil, settings: SettingsPatch? = nil, timeZone: String? = nil) {
        self.displayName = displayName
        self.profileImageUrl = profileImageUrl
        self.settings = settings
        self.timeZone = timeZone
    }

    public struct SettingsPatch: Codable, Sendable {
        public var notificationNewEntry: Bool?
        public var notificationReminder: Bool?
        public var reminderTime: String?

        public init(notificationNewEntry: Bool? = nil, notificationReminder: Bool? = nil, reminderTime: String? = nil) {
            self.notificationNewEntry = notificationNewEntry
            self.notificationReminder = notificationReminder
            self.reminderTime = reminderTime
        }
    }
}
