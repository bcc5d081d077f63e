import DiaryAPI
public import Foundation
import OpenAPIRuntime

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

    /// Sets the profile photo: the image itself, taken as `uploadPhoto` takes one (metadata
    /// removed, within the same daily uploads). The answer's `profileImageURL`, and every
    /// member's and author's the server sends from then on, is a URL it signs, the same for an
    /// hour, shown to the caller and their diaries' members (never in an anonymous diary).
    public func setProfilePhoto(_ data: Data, format: PhotoFormat) async throws -> Me {
        try await setProfilePhoto(HTTPBody(data), format: format)
    }

    /// As `setProfilePhoto(_:format:)`, read from a file as it goes, never whole in memory.
    public func setProfilePhoto(fileURL: URL, format: PhotoFormat, progress: ProgressHandler? = nil) async throws -> Me {
        try await setProfilePhoto(try Self.fileBody(fileURL, progress: progress), format: format)
    }

    func setProfilePhoto(_ body: HTTPBody, format: PhotoFormat) async throws -> Me {
        Me(try await perform {
            let input: Operations.SetProfilePhoto.Input.Body = switch format {
            case .jpeg: .jpeg(body)
            case .png: .png(body)
            case .webp: .imageWebp(body)
            }
            return try await api.setProfilePhoto(body: input).ok.body.json
        })
    }

    /// Removes the profile photo; none is no error.
    public func removeProfilePhoto() async throws -> Me {
        Me(try await perform { try await api.removeProfilePhoto().ok.body.json })
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
