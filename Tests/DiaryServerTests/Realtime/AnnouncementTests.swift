import DiaryModels
import Foundation
import PostgresClient
import Testing
import TestSupport

@testable import DiaryCore

/// Writes announce to the workers once they have committed, never inside their
/// transaction, where a NOTIFY holds the commit behind a lock every notifying commit takes.
@Suite("Announcements after COMMIT")
struct AnnouncementTests {
    @Test("nothing a request's write calls NOTIFYs inside its transaction: only announce_pending, after the COMMIT, and the reminders' batch")
    func noNotifyInsideRequests() async throws {
        try await APIHarness.run { api in
            let rows = try await api.asSuperuser("""
                select p.proname::text as name from pg_proc p join pg_namespace n on n.oid = p.pronamespace
                where n.nspname = 'public' and p.prosrc like '%pg_notify%' order by 1
                """)
            let names = try rows.map { try $0.decode("name", as: String.self) }
            #expect(names == ["announce_pending", "run_reminders"])
        }
    }

    @Test("POST entry announces diary_changes, and push_outbox when it queued a notification, once the entry has committed")
    func postEntryAnnounces() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob")
            let diary = try await api.createDiary("日記", type: .family, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            try await api.asSuperuser("insert into devices (token, user_id, environment) values (\(String(repeating: "b", count: 64)), \(bob.user.id), 'sandbox')")
            let channels = [Announcement.diaryChanges, .pushOutbox].map(\.channel)
            let notifications = PostgresListener.notifications(configuration: api.database, channels: channels, logger: TestDatabase.logger)
            // LISTEN runs on the listener's own thread: post until an announcement arrives.
            let poster = Task {
                for index in 0..<50 {
                    _ = try await api.post("お知らせ \(index)", in: diary.id, token: alice.accessToken)
                    try await pace(.milliseconds(200))
                }
            }
            let heard = try await withTimeLimit("both announcements", within: .seconds(60)) {
                var iterator = notifications.makeAsyncIterator()
                var heard = Set<String>()
                while heard.count < channels.count, let notification = await iterator.next() {
                    heard.insert(notification.channel)
                    // Sent after the COMMIT: what it announces is already there to read.
                    let visible = try await api.asSuperuser("select count(*)::int8 as n from entries where diary_id = \(diary.id)")
                    #expect(try visible[0].decode("n", as: Int.self) > 0)
                }
                return heard
            }
            poster.cancel()
            _ = await poster.result
            #expect(heard == Set(channels))
        }
    }

    @Test("what the SQL announces on diary_changes is what the feed reads: a new member as the diary's members, a post as the diary, each with its position")
    func diaryChangesPayloadIsTheFeeds() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice")
            let notifications = PostgresListener.notifications(configuration: api.database, channels: [Announcement.diaryChanges.channel], logger: TestDatabase.logger)
            // LISTEN runs on the listener's own thread: write until both kinds have been heard.
            // Each round's diary announces its owner joining, then the post.
            let writer = Task {
                for index in 0..<40 {
                    let diary = try await api.createDiary("日記 \(index)", type: .family, token: alice.accessToken)
                    _ = try await api.post("お知らせ \(index)", in: diary.id, token: alice.accessToken)
                    try await pace(.milliseconds(200))
                }
            }
            let heard = try await withTimeLimit("a new member and a post announced", within: .seconds(60)) {
                var iterator = notifications.makeAsyncIterator()
                var members = false, post = false
                while !(members && post), let notification = await iterator.next() {
                    // The test's database is its own: every announcement is one of this test's diaries,
                    // with the position the change took there.
                    guard case .diaryChanged(_, let position, let membersChanged) = FeedNotice(channel: notification.channel, payload: notification.payload) else {
                        Issue.record("the feed cannot read \"\(notification.payload)\"")
                        continue
                    }
                    #expect((position ?? 0) > 0, "no position in \"\(notification.payload)\"")
                    if membersChanged { members = true } else { post = true }
                }
                return members && post
            }
            writer.cancel()
            _ = await writer.result
            #expect(heard)
        }
    }

    @Test("the feed reads a diary_changes payload with or without its position (the release before announced none), a session's end, and nothing else")
    func payloads() {
        let diary = UUID(), session = UUID()
        let changes = Announcement.diaryChanges.channel, sessions = Announcement.sessionsEnded.channel
        #expect(FeedNotice(channel: changes, payload: "\(diary) 7") == .diaryChanged(diary, position: 7, membersChanged: false))
        #expect(FeedNotice(channel: changes, payload: "members \(diary) 6") == .diaryChanged(diary, position: 6, membersChanged: true))
        #expect(FeedNotice(channel: changes, payload: "members \(diary)") == .diaryChanged(diary, position: nil, membersChanged: true))
        var named = ChangeFeed.Named()
        named.note(diary, at: 7, membersChanged: false)
        named.note(diary, at: 5, membersChanged: false)
        named.note(diary, at: 6, membersChanged: true)
        #expect(named.diaries == [diary] && named.positions == [diary: 7] && named.membersChanged == [diary])
        for junk in ["", "members", "\(diary) x", "\(diary) 1 2", "members  \(diary)", "someone \(diary) 1", "\(diary)  1"] {
            #expect(FeedNotice(channel: changes, payload: junk) == .everyDiary, "read \"\(junk)\"")
        }
        // As announce_session_end announces it (announce_latest: the subject, then its detail).
        #expect(FeedNotice(channel: sessions, payload: "\(session.uuidString.lowercased()) ended") == .sessionEnded(session))
        for junk in ["", "\(session)", "\(session) ended x", "nobody ended"] {
            #expect(FeedNotice(channel: sessions, payload: junk) == .everySession, "read \"\(junk)\"")
        }
    }

    @Test("a transaction that logs many changes in two diaries announces each once, with its last position, in the order first announced; hundreds of diaries, the channel alone")
    func manyChangesOneAnnouncement() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice")
            let first = try await api.createDiary("一", type: .family, token: alice.accessToken).id
            let second = try await api.createDiary("二", type: .family, token: alice.accessToken).id
            let rows = try await TestDatabase.withPool(api.database, size: 1) { pool in
                try await pool.transaction(
                    ["select announce('push_outbox')"]
                        + (0..<100).flatMap { _ in [first, second].map { "select log_change(\($0), 'diary.updated')" as PostgresQuery } }
                        + ["""
                           select current_setting('app.announce') as pending,
                               (select change_position from diaries where id = \(first)) as first, (select change_position from diaries where id = \(second)) as second
                           """])
            }
            let row = try #require(rows.last?.first)
            let pending: String = try row.decode("pending")
            let positions = (try row.decode("first", as: Int64.self), try row.decode("second", as: Int64.self))
            #expect(pending == "push_outbox,diary_changes:\(first.uuidString.lowercased()) \(positions.0),diary_changes:\(second.uuidString.lowercased()) \(positions.1)", "\(pending.prefix(300))")

            // Hundreds of subjects (a bulk load): the channel alone, which the feed reads as everything.
            let many = try await TestDatabase.withPool(api.database, size: 1) { pool in
                try await pool.transaction([
                    "select set_config('app.announce', 'push_outbox', false)",
                    "select count(announce_latest('diary_changes', md5(i::text), '1')) from generate_series(1, 400) i",
                    "select current_setting('app.announce') as pending",
                ])
            }
            #expect(try many[2].first?.decode("pending", as: String.self) == "push_outbox,diary_changes")
            #expect(FeedNotice(channel: Announcement.diaryChanges.channel, payload: "") == .everyDiary, "an empty payload must make the feed read everything")
        }
    }
}
