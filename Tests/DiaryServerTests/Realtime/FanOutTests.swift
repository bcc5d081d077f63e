@testable import DiaryCore
import DiaryModels
@testable import DiaryHTTP
import Foundation
import PostgresClient
import Testing
import TestSupport

/// A diary's changes read once and handed to every member's socket (`ChangeFeed.fanOut`),
/// held to delta sync: after each change, every member's socket has the very events
/// `GET …/changes` gives that member from the same cursor, ids included, whichever way the
/// socket got them.
@Suite("Realtime fan-out", .serialized)
struct FanOutTests {
    /// A member's socket and the cursor of the last event it was compared at.
    final class Viewer: @unchecked Sendable {
        let name: String
        let session: Session
        let socket: TestSocket
        var cursor: String

        init(_ name: String, _ session: Session, port: Int) async throws {
            self.name = name
            self.session = session
            socket = TestSocket(port: port, token: session.accessToken)
            let ready = try #require(try await socket.next())
            let object = try #require(try JSONSerialization.jsonObject(with: Data(ready.utf8)) as? [String: Any])
            try #require(object["type"] as? String == "ready")
            cursor = try #require(object["cursor"] as? String)
        }

        /// The socket's next `count` change events.
        func events(_ count: Int) async throws -> [ChangeEvent] {
            var events: [ChangeEvent] = []
            while events.count < count {
                guard let text = try await socket.next() else { throw HarnessError("\(name)'s socket closed") }
                if let event = try? PostgresJSONCoding.decoder.decode(ChangeEvent.self, from: Data(text.utf8)) { events.append(event) }
            }
            return events
        }

        /// Delta sync of `diary` from the last cursor compared, against the socket's events.
        func expectTwin(_ api: APIHarness, in diary: UUID, _ step: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let reply = try await api.call(.get, "/v1/diaries/\(diary)/changes?since=\(cursor)", token: session.accessToken)
            try #require(reply.status == .ok, "\(name), \(step): \(reply.text)", sourceLocation: sourceLocation)
            let delta = try reply.decode(ChangeList.self)
            #expect(!delta.changes.isEmpty, "\(name), \(step): delta sync has the change", sourceLocation: sourceLocation)
            let socket = try await events(delta.changes.count)
            #expect(socket == delta.changes, "\(name), \(step)", sourceLocation: sourceLocation)
            cursor = delta.nextCursor
        }
    }

    @Test("author, members, a joiner and a leaver: each socket's events are delta sync's, and entries, reads, edits and deletions reach them with no read of their own")
    func twinOfDeltaSync() async throws {
        try await RealtimeTests.live { api, port in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob"), carol = try await api.signIn("carol"), dave = try await api.signIn("dave")
            let diary = try await api.createDiary("家族", type: .family, token: alice.accessToken)
            for member in [bob, carol] { #expect(try await api.join(diary.inviteCode, token: member.accessToken).status == .ok) }
            var viewers = [
                try await Viewer("alice", alice, port: port), try await Viewer("bob", bob, port: port), try await Viewer("carol", carol, port: port),
            ]
            defer { for viewer in viewers { viewer.socket.close() } }
            func step(_ name: String, _ change: () async throws -> Void) async throws {
                try await change()
                for viewer in viewers { try await viewer.expectTwin(api, in: diary.id, name) }
            }

            // The feed learns the diary's position from its first change (or poll); from then on it shares.
            var attempts = 0
            while api.feed.fannedOutChanges == 0 {
                attempts += 1
                try #require(attempts <= 10, "the feed never shared a change")
                try await step("post \(attempts), until shared") { _ = try await api.post("はじめまして", in: diary.id, token: alice.accessToken) }
            }
            let readsBefore = api.feed.socketReads, sharedBefore = api.feed.fannedOutChanges

            var posted: Entry?
            try await step("alice posts") { posted = try await api.post("今日のこと", in: diary.id, token: alice.accessToken).decode(Entry.self) }
            let entry = try #require(posted)
            var bobs: Entry?
            try await step("bob posts") { bobs = try await api.post("ぼくも", in: diary.id, token: bob.accessToken).decode(Entry.self) }
            try await step("carol reads alice's") {
                let reply = try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(entry.id)/read", token: carol.accessToken)
                try #require(reply.status == .noContent)
            }
            try await step("alice edits hers") {
                let reply = try await api.call(.patch, "/v1/diaries/\(diary.id)/entries/\(entry.id)", token: alice.accessToken, body: UpdateEntryRequest(content: "書き直し"))
                try #require(reply.status == .ok)
            }
            let bobsEntry = try #require(bobs)
            try await step("bob deletes his") {
                let reply = try await api.call(.delete, "/v1/diaries/\(diary.id)/entries/\(bobsEntry.id)", token: bob.accessToken)
                try #require(reply.status == .noContent)
            }
            #expect(api.feed.socketReads == readsBefore, "no socket read the log for these five changes")
            #expect(api.feed.fannedOutChanges == sharedBefore + 5, "each change was read once, for all three")

            // A joiner: the join goes to each socket's own read; what follows is shared with them too.
            let daves = try await Viewer("dave", dave, port: port)
            viewers.append(daves)
            #expect(try await api.join(diary.inviteCode, token: dave.accessToken).status == .ok)
            for viewer in viewers { try await viewer.expectTwin(api, in: diary.id, "dave joins") }
            try await step("alice welcomes dave") { _ = try await api.post("ようこそ", in: diary.id, token: alice.accessToken) }

            // A leaver: their own departure, then nothing more of the diary.
            let carols = viewers.remove(at: 2)
            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(carol.user.id)", token: carol.accessToken).status == .noContent)
            for viewer in viewers { try await viewer.expectTwin(api, in: diary.id, "carol leaves") }
            #expect(try await carols.events(1).map(\.data) == [.memberLeft(DepartedMember(userId: carol.user.id))])
            try await step("bob posts after carol left") { _ = try await api.post("さみしい", in: diary.id, token: bob.accessToken) }
            let own = try await api.createDiary("ひとり", type: .friends, token: carol.accessToken)
            _ = try await api.post("わたしの", in: own.id, token: carol.accessToken)
            let next = try await carols.events(1)
            #expect(next.map(\.diaryId) == [own.id], "carol's socket has nothing of the diary she left after her departure")
        }
    }

    @Test("sockets begin where the feed says: ready names each of its user's diaries at its position, with no read of their own, and what follows arrives")
    func readyFromTheFeed() async throws {
        try await RealtimeTests.live { api, port in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob"), carol = try await api.signIn("carol")
            let shared = try await api.createDiary("二人", type: .couple, token: alice.accessToken)
            #expect(try await api.join(shared.inviteCode, token: bob.accessToken).status == .ok)
            let own = try await api.createDiary("わたしの", type: .friends, token: alice.accessToken)
            _ = try await api.post("まえの", in: shared.id, token: alice.accessToken)
            _ = try await api.post("まえの", in: own.id, token: alice.accessToken)
            let positions = try await TestDatabase.withPool(api.database, size: 1) { pool in
                var positions: [UUID: Int64] = [:]
                for row in try await pool.query("select id, change_position from diaries where id = any(\([shared.id, own.id]))") {
                    positions[try row.decode("id")] = try row.decode("change_position", as: Int64.self)
                }
                return positions
            }

            let readsBefore = api.feed.socketReads
            let viewers = [
                try await Viewer("alice", alice, port: port), try await Viewer("alice again", alice, port: port),
                try await Viewer("bob", bob, port: port), try await Viewer("carol", carol, port: port),
            ]
            defer { for viewer in viewers { viewer.socket.close() } }
            #expect(api.feed.socketReads == readsBefore, "no socket read where it begins")
            #expect(ChangeCursor(viewers[0].cursor)?.positions == positions)
            #expect(ChangeCursor(viewers[1].cursor)?.positions == positions)
            #expect(ChangeCursor(viewers[2].cursor)?.positions == [shared.id: positions[shared.id]!])
            #expect(ChangeCursor(viewers[3].cursor)?.positions == [:], "a user in no diary begins in none")

            _ = try await api.post("あとの", in: shared.id, token: bob.accessToken)
            for viewer in viewers.prefix(3) { try await viewer.expectTwin(api, in: shared.id, "bob posts") }
            let carols = try await api.createDiary("はじめて", type: .friends, token: carol.accessToken)
            _ = try await api.post("はじめての", in: carols.id, token: carol.accessToken)
            #expect(try await viewers[3].events(2).map(\.diaryId) == [carols.id, carols.id], "her new diary's first changes reach her")
        }
    }

    @Test("an anonymous diary is never shared: each member's socket reads it under its own policies, and matches delta sync")
    func anonymousReadsItsOwn() async throws {
        try await RealtimeTests.live { api, port in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob")
            let diary = try await api.createDiary("匿名", type: .anonymous, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            let viewers = [try await Viewer("alice", alice, port: port), try await Viewer("bob", bob, port: port)]
            defer { for viewer in viewers { viewer.socket.close() } }
            let shared = api.feed.fannedOutChanges
            for round in 0..<3 {
                let entry = try await api.post("ひみつ \(round)", in: diary.id, token: alice.accessToken).decode(Entry.self)
                for viewer in viewers { try await viewer.expectTwin(api, in: diary.id, "post \(round)") }
                #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(entry.id)/read", token: bob.accessToken).status == .noContent)
                for viewer in viewers { try await viewer.expectTwin(api, in: diary.id, "read \(round)") }
            }
            #expect(api.feed.fannedOutChanges == shared)
        }
    }
}
