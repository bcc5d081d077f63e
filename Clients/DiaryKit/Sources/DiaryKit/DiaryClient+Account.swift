import DiaryAPI
import Foundation

extension DiaryClient {
    /// The signed-in user.
    public func me() async throws -> Me {
        Me(try await perform { try await api.getMe().ok.body.json })
    }

    /// Changes the profile; nil leaves a field as it is.
    ///
    /// - Parameters:
    ///   - displayName: 1 to 50 characters.
    ///   - timeZone: an IANA name such as `Asia/Tokyo` (`TimeZone.current.identifier`); reminders
    ///     and today's question follow it.
    ///   - notificationNewEntry: push when a member writes.
    ///   - notificationReminder: the daily reminder.
    ///   - reminderTime: `HH:mm`, in `timeZone`.
    public func updateProfile(displayName: String? = nil, timeZone: String? = nil, notificationNewEntry: Bool? = nil,
                              notificationReminder: Bool? = nil, reminderTime: String? = nil) async throws -> Me {
        let settingsChanged = notificationNewEntry != nil || notificationReminder != nil || reminderTime != nil
        let body = Components.Schemas.UpdateMeRequest(
            displayName: displayName, timeZone: timeZone,
            settings: settingsChanged
                ? .init(notificationNewEntry: notificationNewEntry, notificationReminder: notificationReminder,
                        reminderTime: reminderTime)
                : nil)
        return Me(try await perform { try await api.updateMe(body: .json(body)).ok.body.json })
    }

    /// Deletes the account, as App Review requires an app to offer: owned diaries pass to
    /// their longest-standing member, and the session ends. DiaryKit forgets the session.
    public func deleteAccount() async throws {
        _ = try await perform { try await api.deleteAccount().noContent }
        try await authority.replace(with: nil)
    }

    /// Today's question, in the caller's time zone.
    public func todayQuestion() async throws -> TodayQuestion {
        TodayQuestion(try await perform { try await api.getTodayQuestion().ok.body.json })
    }
}
