import DiaryModels
import Foundation
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore

/// The daily reminder, against a clock the tests turn: each tick says what time it is.
@Suite("Reminders")
struct ReminderTests {
    static func instant(_ text: String) -> Date {
        let formatter = ISO8601DateFormatter()
        return formatter.date(from: text)!
    }

    /// A user with one device, their reminder at `time` in `zone`.
    static func user(_ api: APIHarness, _ name: String, zone: String, time: String) async throws -> Session {
        let session = try await api.signIn(name)
        let reply = try await api.call(.patch, "/v1/me", token: session.accessToken, json: #"{"timeZone":"\#(zone)","settings":{"reminderTime":"\#(time)","notificationReminder":true}}"#)
        #expect(reply.status == .ok, "\(reply.text)")
        try await api.call(.put, "/v1/me/devices/\(PushFixture.deviceToken())", token: session.accessToken, json: #"{"environment":"sandbox"}"#)
        return session
    }

    static func reminders(_ api: APIHarness, for user: Session) async throws -> Int {
        try await api.asSuperuser("select count(*) from push_outbox where kind = 'reminder' and user_id = \(user.user.id)").first!.decode("count", as: Int.self)
    }

    static func scheduler(_ api: APIHarness) -> ReminderScheduler {
        ReminderScheduler(pool: api.pool, logger: TestDatabase.logger)
    }

    @Test("fires at the minute in the user's own zone, east and west of UTC, once per local day, with the reminder's payload")
    func onTimeOncePerDay() async throws {
        try await APIHarness.run { api in try await Self.firesOnTimeOncePerDay(api) }
    }

    /// The scheduler's ticks on whatever database `api` serves (also the cluster: CitusClusterTests).
    static func firesOnTimeOncePerDay(_ api: APIHarness, tag: String = "") async throws {
        let tokyo = try await Self.user(api, "tokyo" + tag, zone: "Asia/Tokyo", time: "21:00")
        let angeles = try await Self.user(api, "angeles" + tag, zone: "America/Los_Angeles", time: "08:00")
        let clock = Self.scheduler(api)
        // 2027-01-10 20:59:30 in Tokyo is 11:59:30 UTC; in Los Angeles, 03:59:30.
        try await clock.tick(at: Self.instant("2027-01-10T11:59:30Z"))
        #expect(try await Self.reminders(api, for: tokyo) == 0)
        let tokyoTime = try await clock.tick(at: Self.instant("2027-01-10T12:00:05Z"))
        #expect(tokyoTime[tokyo.user.id] == .sent)
        #expect(try await Self.reminders(api, for: tokyo) == 1)
        #expect(try await Self.reminders(api, for: angeles) == 0)
        try await clock.tick(at: Self.instant("2027-01-10T12:00:25Z"))
        try await clock.tick(at: Self.instant("2027-01-10T14:00:00Z"))
        #expect(try await Self.reminders(api, for: tokyo) == 1, "once per local day")
        // 08:00 in Los Angeles (UTC−8) is 16:00 UTC.
        try await clock.tick(at: Self.instant("2027-01-10T15:59:50Z"))
        #expect(try await Self.reminders(api, for: angeles) == 0)
        try await clock.tick(at: Self.instant("2027-01-10T16:00:10Z"))
        #expect(try await Self.reminders(api, for: angeles) == 1)
        // The next local day.
        try await clock.tick(at: Self.instant("2027-01-11T12:00:03Z"))
        #expect(try await Self.reminders(api, for: tokyo) == 2)

        let payload = try await api.asSuperuser("""
            select bool_and(payload = '{"aps": {"alert": {"title": "ずっと日記", "body": "今日の日記を書きましょう"}, "sound": "default"}}'::jsonb) as exact
            from push_outbox where kind = 'reminder'
            """)
        #expect(try payload.first!.decode("exact", as: Bool.self))
    }

    @Test("a time that a daylight-saving jump skips fires at the first valid minute after it")
    func daylightSaving() async throws {
        try await APIHarness.run { api in
            let york = try await Self.user(api, "york", zone: "America/New_York", time: "02:30")
            let clock = Self.scheduler(api)
            // 2027-03-14: clocks go from 02:00 EST to 03:00 EDT (07:00 UTC). 02:30 does not exist.
            try await clock.tick(at: Self.instant("2027-03-14T06:30:00Z"))
            try await clock.tick(at: Self.instant("2027-03-14T06:59:50Z"))
            #expect(try await Self.reminders(api, for: york) == 0)
            try await clock.tick(at: Self.instant("2027-03-14T07:00:10Z"))
            #expect(try await Self.reminders(api, for: york) == 1)
            // The next day 02:30 EDT exists again: 06:30 UTC.
            try await clock.tick(at: Self.instant("2027-03-15T06:29:50Z"))
            #expect(try await Self.reminders(api, for: york) == 1)
            try await clock.tick(at: Self.instant("2027-03-15T06:30:10Z"))
            #expect(try await Self.reminders(api, for: york) == 2)
        }
    }

    @Test("skipped when the user has written that local day, in any diary")
    func alreadyWritten() async throws {
        try await APIHarness.run { api in
            let writer = try await Self.user(api, "writer", zone: "Asia/Tokyo", time: "21:00")
            let diary = try await api.createDiary("日記", type: .family, token: writer.accessToken)
            let entry = try await api.post("今日も書いた", in: diary.id, token: writer.accessToken).decode(Entry.self)
            // Written at 09:00 Tokyo time that day.
            try await api.asSuperuser("update entries set created_at = '2027-01-10T00:00:00Z' where id = \(entry.id)")
            let clock = Self.scheduler(api)
            try await clock.tick(at: Self.instant("2027-01-10T11:00:00Z"))
            let handled = try await clock.tick(at: Self.instant("2027-01-10T12:00:05Z"))
            #expect(handled[writer.user.id] == .written)
            #expect(try await Self.reminders(api, for: writer) == 0)
            // The next day they have not written: the reminder goes.
            try await clock.tick(at: Self.instant("2027-01-11T12:00:05Z"))
            #expect(try await Self.reminders(api, for: writer) == 1)
        }
    }

    @Test("a late start sends today's reminder once; days missed entirely send nothing")
    func lateStart() async throws {
        try await APIHarness.run { api in
            let late = try await Self.user(api, "late", zone: "Asia/Tokyo", time: "21:00")
            let clock = Self.scheduler(api)
            try await clock.tick(at: Self.instant("2027-01-10T10:00:00Z"))
            // Down from 19:00 to 23:00 Tokyo time: back within the same local day, sent late, once.
            try await clock.tick(at: Self.instant("2027-01-10T14:00:00Z"))
            try await clock.tick(at: Self.instant("2027-01-10T14:00:10Z"))
            #expect(try await Self.reminders(api, for: late) == 1)
            // Down for three days, back at 20:00 on the fourth: nothing for the days missed.
            try await clock.tick(at: Self.instant("2027-01-14T11:00:00Z"))
            #expect(try await Self.reminders(api, for: late) == 1)
            try await clock.tick(at: Self.instant("2027-01-14T12:00:05Z"))
            #expect(try await Self.reminders(api, for: late) == 2)
        }
    }

    @Test("turning the reminder off stops it; moving its time after today's was sent waits for tomorrow")
    func settingsChanges() async throws {
        try await APIHarness.run { api in
            let user = try await Self.user(api, "changer", zone: "Asia/Tokyo", time: "21:00")
            let clock = Self.scheduler(api)
            try await clock.tick(at: Self.instant("2027-01-10T11:00:00Z"))
            try await clock.tick(at: Self.instant("2027-01-10T12:00:05Z"))
            #expect(try await Self.reminders(api, for: user) == 1)
            try await api.call(.patch, "/v1/me", token: user.accessToken, json: #"{"settings":{"reminderTime":"22:00"}}"#)
            try await clock.tick(at: Self.instant("2027-01-10T13:00:05Z"))
            #expect(try await Self.reminders(api, for: user) == 1, "today's was sent already")
            try await clock.tick(at: Self.instant("2027-01-11T13:00:05Z"))
            #expect(try await Self.reminders(api, for: user) == 2)

            try await api.call(.patch, "/v1/me", token: user.accessToken, json: #"{"settings":{"notificationReminder":false}}"#)
            try await clock.tick(at: Self.instant("2027-01-12T13:00:05Z"))
            #expect(try await Self.reminders(api, for: user) == 2)
        }
    }
}
