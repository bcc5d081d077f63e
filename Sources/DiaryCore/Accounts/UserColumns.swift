import DiaryModels
import Foundation
import PostgresClient

/// The columns that make a `Me`, and how to read them.
enum UserColumns {
    static let me: PostgresFragment = """
        users.id, users.display_name, users.settings, users.time_zone,
        nullif(users.premium_expires_at, 'infinity') as premium_expires_at, user_plan(users.id) as plan, users.created_at,
        (select f.id::text || ' ' || f.content_hash || ' ' || f.content_type from profile_photos f where f.user_id = users.id) as profile_photo
        """

    /// How settings are stored: snake_case keys in jsonb.
    struct StoredSettings: Codable, Sendable {
        var notification_new_entry: Bool?
        var notification_reminder: Bool?
        var reminder_time: String?
    }

    /// `links` mints the profile photo's URL.
    static func me(from row: PostgresRow, links: PhotoLinks) throws -> Me {
        let stored = try row.decode("settings", as: PostgresJSON<StoredSettings>.self).value
        let defaults = UserSettings()
        guard let plan = Me.Plan(rawValue: try row.decode("plan")) else { throw DomainError.inconsistent("an unknown plan") }
        return Me(
            id: try row.decode("id"),
            displayName: try row.decode("display_name"),
            profileImageUrl: links.profileImageURL(try row.decode("profile_photo")),
            settings: UserSettings(
                notificationNewEntry: stored.notification_new_entry ?? defaults.notificationNewEntry,
                notificationReminder: stored.notification_reminder ?? defaults.notificationReminder,
                reminderTime: stored.reminder_time ?? defaults.reminderTime
            ),
            timeZone: try row.decode("time_zone"),
            isPremium: plan != .free,
            premiumExpiresAt: try row.decode("premium_expires_at"),
            plan: plan,
            createdAt: try row.decode("created_at")
        )
    }
}
