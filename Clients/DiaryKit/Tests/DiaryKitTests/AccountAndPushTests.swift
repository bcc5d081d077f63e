import DiaryKit
import Foundation
import Testing

/// The account (profile, settings, deletion) and push devices.
@Suite("Account and push")
struct AccountAndPushTests {
    @Test("profile and settings change, and the account can be deleted in-app")
    func account() async throws {
        try await LiveServer.with { server in
            let aiko = try await server.signedIn("aiko")
            let me = try await aiko.updateProfile(displayName: "あいこ", timeZone: "Asia/Tokyo", notificationReminder: true,
                                                  reminderTime: "21:30")
            #expect(me.displayName == "あいこ" && me.timeZone == "Asia/Tokyo")
            #expect(me.settings.notificationReminder && me.settings.reminderTime == "21:30")
            #expect(me.plan == .free)
            #expect(!(try await aiko.todayQuestion().question.isEmpty))

            try await aiko.deleteAccount()
            #expect(await aiko.isSignedIn == false)
            let again = try await server.signedIn("aiko")
            #expect(try await again.me().id != me.id, "a new account, not the deleted one")
        }
    }

    @Test("a device registers, lists and is removed")
    func devices() async throws {
        try await LiveServer.with { server in
            let aiko = try await server.signedIn("aiko")
            let token = Data((0..<32).map { UInt8($0 * 7 & 0xff) })
            try await aiko.registerDevice(token: token, environment: .sandbox)
            let devices = try await aiko.devices()
            #expect(devices.count == 1)
            #expect(devices.first?.token == token.map { String(format: "%02x", $0) }.joined())
            #expect(devices.first?.environment == .sandbox)
            try await aiko.removeDevice(token: token)
            #expect(try await aiko.devices().isEmpty)
        }
    }

    @Test("a notification's userInfo is read as the server sends it")
    func notificationPayload() throws {
        let entryInfo: [AnyHashable: Any] = [
            "aps": ["alert": ["title": "新しい日記", "body": "renさんが日記を書きました"], "sound": "default", "thread-id": "d1"],
            "diaryId": "d1", "entryId": "e1",
        ]
        let entry = try #require(PushNotification(userInfo: entryInfo))
        #expect(entry.subject == .newEntry(diaryID: "d1", entryID: "e1"))
        #expect(entry.title == "新しい日記")
        let reminder = try #require(PushNotification(userInfo: ["aps": ["alert": ["title": "ずっと日記", "body": "今日の日記を書きましょう"]]]))
        #expect(reminder.subject == .reminder)
        #expect(PushNotification(userInfo: ["other": 1]) == nil)
    }
}
