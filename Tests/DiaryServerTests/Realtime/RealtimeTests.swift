@testable import DiaryCore
import DiaryModels
@testable import DiaryHTTP
import Foundation
import NIOWebSocket
import PostgresClient
import Testing
import TestSupport

/// `/v1/realtime` on a live server: real sockets, a real database, the real feed.
@Suite("Realtime socket", .serialized)
struct RealtimeTests {
    static func live(
        slowConsumerGrace: Duration = .seconds(10), pingPeriod: Duration = .seconds(25), _ body: @Sendable @escaping (APIHarness, Int) async throws -> Void
    ) async throws {
        try await APIHarness.run(testing: .live, slowConsumerGrace: slowConsumerGrace, pingPeriod: pingPeriod) { api in
            try await body(api, try #require(api.client.port))
        }
    }

    static func entry(_ event: ChangeEvent) throws -> Entry {
        guard case .entry(let entry) = event.data else { throw HarnessError("not an entry: \(event)") }
        return entry
    }

    @Test("two members on sockets see posts, reads, edits, deletions, joins and departures, each from their side")
    func fullFlow() async throws {
        try await Self.live { api, port in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob"), carol = try await api.signIn("carol")
            let diary = try await api.createDiary("家族", type: .family, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            let aliceSocket = TestSocket(port: port, token: alice.accessToken)
            let bobSocket = TestSocket(port: port, token: bob.accessToken)
            defer { aliceSocket.close(); bobSocket.close() }
            #expect(try await aliceSocket.nextType() == "ready")
            #expect(try await bobSocket.nextType() == "ready")

            let posted = try await api.post("今日のこと", in: diary.id, token: alice.accessToken).decode(Entry.self)
            let seenByBob = try Self.entry(try await bobSocket.event(.entryCreated))
            #expect(seenByBob.id == posted.id && !seenByBob.isMine && seenByBob.content == "今日のこと")
            #expect(try Self.entry(try await aliceSocket.event(.entryCreated)).isMine)

            #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(posted.id)/read", token: bob.accessToken).status == .noContent)
            let read = try await aliceSocket.event(.entryRead)
            #expect(read.data == .entryRead(EntryRead(entryId: posted.id, userId: bob.user.id, readAt: read.at)))

            #expect(try await api.call(.patch, "/v1/diaries/\(diary.id)/entries/\(posted.id)", token: alice.accessToken, body: UpdateEntryRequest(content: "書き直し")).status == .ok)
            #expect(try Self.entry(try await bobSocket.event(.entryUpdated)).content == "書き直し")
            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/entries/\(posted.id)", token: alice.accessToken).status == .noContent)
            #expect(try await bobSocket.event(.entryDeleted).data == .entryDeleted(DeletedEntry(id: posted.id)))

            // Carol's socket, opened before she joins, starts receiving the diary at once.
            let carolSocket = TestSocket(port: port, token: carol.accessToken)
            defer { carolSocket.close() }
            #expect(try await carolSocket.nextType() == "ready")
            #expect(try await api.join(diary.inviteCode, token: carol.accessToken).status == .ok)
            if case .member(let member) = try await aliceSocket.event(.memberJoined).data { #expect(member.userId == carol.user.id) }
            _ = try await carolSocket.event(.memberJoined)
            _ = try await api.post("ようこそ", in: diary.id, token: bob.accessToken)
            #expect(try Self.entry(try await carolSocket.event(.entryCreated)).content == "ようこそ")

            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(carol.user.id)", token: carol.accessToken).status == .noContent)
            #expect(try await aliceSocket.event(.memberLeft).data == .memberLeft(DepartedMember(userId: carol.user.id)))
        }
    }

    @Test("anonymous diaries: no frame carries a real user id or name")
    func anonymousFrames() async throws {
        try await Self.live { api, port in
            let alice = try await api.signIn("alice-real-name"), bob = try await api.signIn("bob-real-name")
            let diary = try await api.createDiary("秘密", type: .anonymous, token: alice.accessToken)
            let aliceSocket = TestSocket(port: port, token: alice.accessToken)
            defer { aliceSocket.close() }
            #expect(try await aliceSocket.nextType() == "ready")
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            let entry = try await api.post("bob writes", in: diary.id, token: bob.accessToken).decode(Entry.self)
            let mine = try await api.post("alice writes", in: diary.id, token: alice.accessToken).decode(Entry.self)
            #expect(try await api.call(.post, "/v1/diaries/\(diary.id)/entries/\(mine.id)/read", token: bob.accessToken).status == .noContent)
            #expect(try await api.call(.patch, "/v1/diaries/\(diary.id)/entries/\(entry.id)", token: bob.accessToken, body: UpdateEntryRequest(content: "edited")).status == .ok)
            let bobAlias = try #require(try await api.call(.get, "/v1/diaries/\(diary.id)/members", token: alice.accessToken).decode(MemberList.self).members.first { $0.userId != alice.user.id }?.userId)
            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(bob.user.id)", token: bob.accessToken).status == .noContent)
            _ = try await aliceSocket.event(.memberLeft)
            let frames = aliceSocket.frames.withLockedValue { $0 }.joined(separator: "\n")
            // Events show the entry as it is when delivered: by then, edited.
            #expect(frames.contains("edited") && frames.lowercased().contains(bobAlias.uuidString.lowercased()))
            #expect(!frames.lowercased().contains(bob.user.id.uuidString.lowercased()), "a real id in: \(frames)")
            #expect(!frames.contains("bob-real-name"))
        }
    }

    @Test("resuming after a disconnect in a burst of 200 changes delivers each exactly once, in order")
    func resumeMidBurst() async throws {
        try await Self.live { api, port in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob")
            let diary = try await api.createDiary("二人", type: .couple, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            let first = TestSocket(port: port, token: bob.accessToken)
            #expect(try await first.nextType() == "ready")
            let writer = Task {
                for index in 0..<200 { _ = try await api.post("burst \(index)", in: diary.id, token: alice.accessToken) }
            }
            var seen: [ChangeEvent] = []
            while seen.count < 40 { seen.append(try await first.event(.entryCreated)) }
            first.close()
            let resumed = TestSocket(port: port, query: "?since=\(seen.last!.id)", token: bob.accessToken)
            defer { resumed.close() }
            #expect(try await resumed.nextType() == "ready")
            try await writer.value
            while seen.count < 200 { seen.append(try await resumed.event(.entryCreated)) }
            let contents = try seen.map { try Self.entry($0).content }
            #expect(contents == (0..<200).map { "burst \($0)" })
            #expect(Set(seen.map(\.id)).count == 200)
            // Nothing more comes: no duplicate after the burst.
            await #expect(throws: (any Error).self) { _ = try await resumed.next(within: .milliseconds(1500)) }
        }
    }

    @Test("refusals at the upgrade: no token or a bad one is a 401 problem, the 11th socket a 429")
    func upgradeRefusals() async throws {
        try await Self.live { api, port in
            let alice = try await api.signIn("alice")
            #expect(await TestSocket(port: port, token: nil).refused())
            #expect(await TestSocket(port: port, token: "not-a-token").refused())
            let raw = try await Self.rawUpgrade(port: port, token: nil)
            #expect(raw.hasPrefix("HTTP/1.1 401") && raw.contains("application/problem+json") && raw.contains(#""code":"unauthorized""#), "\(raw)")
            // The query parameter works where headers cannot be set.
            let viaQuery = TestSocket(port: port, query: "?access_token=\(alice.accessToken)", token: nil)
            #expect(try await viaQuery.nextType() == "ready")
            var sockets = [viaQuery]
            for _ in 1..<10 {
                let socket = TestSocket(port: port, token: alice.accessToken)
                #expect(try await socket.nextType() == "ready")
                sockets.append(socket)
            }
            let eleventh = try await Self.rawUpgrade(port: port, token: alice.accessToken)
            #expect(eleventh.hasPrefix("HTTP/1.1 429") && eleventh.contains(#""code":"rate_limited""#), "\(eleventh)")
            sockets.forEach { $0.close() }
        }
    }

    /// An upgrade request by hand, to read the refusal's status and body.
    static func rawUpgrade(port: Int, token: String?) async throws -> String {
        String(decoding: try await rawUpgradeBytes(port: port, token: token), as: UTF8.self)
    }

    /// The frames after a 101 answer: each one's opcode and payload (a server's are not masked).
    static func frames(afterUpgrade reply: [UInt8]) throws -> [(opcode: UInt8, payload: [UInt8])] {
        let end = try #require((0..<max(reply.count - 3, 0)).first { reply[$0..<$0 + 4].elementsEqual("\r\n\r\n".utf8) })
        var rest = reply[(end + 4)...]
        var frames: [(opcode: UInt8, payload: [UInt8])] = []
        while rest.count >= 2 {
            let opcode = rest[rest.startIndex] & 0x0F
            var length = Int(rest[rest.startIndex + 1] & 0x7F)
            var header = 2
            if length == 126 {
                length = rest.dropFirst(2).prefix(2).reduce(0) { $0 << 8 | Int($1) }
                header = 4
            } else if length == 127 {
                length = rest.dropFirst(2).prefix(8).reduce(0) { $0 << 8 | Int($1) }
                header = 10
            }
            guard rest.count >= header + length else { break }
            frames.append((opcode, Array(rest.dropFirst(header).prefix(length))))
            rest = rest.dropFirst(header + length)
        }
        return frames
    }

    /// Everything the server sends after the request, until it closes the connection; the
    /// client sends nothing more, not even a pong.
    static func rawUpgradeBytes(port: Int, token: String?) async throws -> [UInt8] {
        let socket = try RawWebSocket(port: port, token: token)
        defer { socket.close() }
        return try await socket.readToEnd()
    }

    @Test("a peer that answers no ping is closed with 1001 a ping period after one, while one that answers stays open")
    func unansweredPing() async throws {
        try await Self.live(pingPeriod: .seconds(1)) { api, port in
            let alice = try await api.signIn("alice")
            let diary = try await api.createDiary("ひとり", type: .friends, token: alice.accessToken)
            let answering = TestSocket(port: port, token: alice.accessToken)
            defer { answering.close() }
            #expect(try await answering.nextType() == "ready")
            // Returns once the server has closed the connection: its close frame unanswered, after `closeTimeout`.
            let frames = try Self.frames(afterUpgrade: try await Self.rawUpgradeBytes(port: port, token: alice.accessToken))
            #expect(frames.first?.opcode == 0x1, "ready")
            #expect(frames.contains { $0.opcode == 0x9 }, "a ping before the close")
            let close = try #require(frames.last, "a close frame")
            #expect(close.opcode == 0x8 && close.payload.prefix(2).elementsEqual([0x03, 0xE9]), "1001: \(close.payload)")
            #expect(String(decoding: close.payload.dropFirst(2), as: UTF8.self) == "ping unanswered")
            _ = try await api.post("まだいる?", in: diary.id, token: alice.accessToken)
            #expect(try await answering.event(.entryCreated).diaryId == diary.id, "the socket that answers its pings stays open")
        }
    }

    @Test("the feed wakes a user's subscriptions naming the diaries that moved: all at its first round, then only the diary a NOTIFY names, and only its members")
    func wakesNameTheirDiaries() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob"), carol = try await api.signIn("carol")
            let shared = try await api.createDiary("二人", type: .couple, token: alice.accessToken)
            #expect(try await api.join(shared.inviteCode, token: bob.accessToken).status == .ok)
            let other = try await api.createDiary("友達", type: .friends, token: carol.accessToken)
            // A new server's feed, not running yet, listening on this database and polling
            // hourly: only its first round and NOTIFYs wake anyone.
            try await Self.withFeed(api, polling: .seconds(3600)) { feed in
                let bobs = try #require(feed.subscribe(TokenService.Identity(userID: bob.user.id, sessionID: UUID())))
                let carols = try #require(feed.subscribe(TokenService.Identity(userID: carol.user.id, sessionID: UUID())))
                // Posted before the feed runs: its first round wakes every socket for each of its diaries.
                _ = try await api.post("届いた?", in: shared.id, token: alice.accessToken)
                let running = Task { await feed.run() }
                #expect(await Self.nextWake(bobs) == [shared.id], "a socket that read before the first round waits for the diary's next change")
                #expect(await Self.nextWake(carols) == [other.id])

                // A post in one diary wakes its member alone, for that diary: Carol's next wake,
                // after a post in hers, names hers only, so the first never woke her.
                _ = try await api.post("二人だけ", in: shared.id, token: alice.accessToken)
                #expect(await Self.nextWake(bobs) == [shared.id])
                _ = try await api.post("みんなへ", in: other.id, token: carol.accessToken)
                #expect(await Self.nextWake(carols) == [other.id])

                // Joining a diary wakes the joiner for it, through the members NOTIFY.
                #expect(try await api.join(other.inviteCode, token: bob.accessToken).status == .ok)
                #expect(await Self.nextWake(bobs) == [other.id])
                #expect(await Self.nextWake(carols) == [other.id])

                // A user the feed has not read yet, removed before its next round: the diaries it
                // reads for him no longer name the diary, and still he is woken for it, where his
                // socket has a departure to tell. No round runs between his subscription and the
                // removal: only NOTIFYs start one.
                let dave = try await api.signIn("dave")
                #expect(try await api.join(other.inviteCode, token: dave.accessToken).status == .ok)
                #expect(await Self.nextWake(carols) == [other.id])
                let daves = try #require(feed.subscribe(TokenService.Identity(userID: dave.user.id, sessionID: UUID())))
                #expect(try await api.call(.delete, "/v1/diaries/\(other.id)/members/\(dave.user.id)", token: carol.accessToken).status == .noContent)
                #expect(await Self.nextWake(daves) == [other.id])
                running.cancel()
                await running.value
            }
        }
    }

    @Test("a change whose NOTIFY never came wakes its diary's followers by the poll, which runs beside the rounds")
    func pollFindsWhatNoNotifySaid() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob")
            let diary = try await api.createDiary("二人", type: .couple, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            try await Self.withFeed(api, polling: .milliseconds(100)) { feed in
                let bobs = try #require(feed.subscribe(TokenService.Identity(userID: bob.user.id, sessionID: UUID())))
                let running = Task { await feed.run() }
                #expect(await Self.nextWake(bobs) == [diary.id], "the first round")
                // Posted as an operator would, with no announce_pending after the COMMIT: no NOTIFY.
                let before = try await api.asSuperuser("select change_position from diaries where id = \(diary.id)")[0].decode("change_position", as: Int64.self)
                _ = try await api.asSuperuser("select post_entry_as(\(alice.user.id), \(diary.id), \(UUID()), '黙って書いた')")
                #expect(await Self.nextWake(bobs) == [diary.id], "the poll found the diary past where the feed knew it")
                let after = try await api.asSuperuser("select change_position from diaries where id = \(diary.id)")[0].decode("change_position", as: Int64.self)
                #expect(after > before)
                running.cancel()
                await running.value
            }
        }
    }

    /// A new server's feed on the test's database, not running yet, polling every `interval`,
    /// with no backstop round and no session check within a test; its pool closed after `body`.
    static func withFeed(_ api: APIHarness, polling interval: Duration, _ body: (ChangeFeed) async throws -> Void) async throws {
        var options = ChangeFeed.Options()
        options.pollInterval = interval
        options.membershipInterval = .seconds(3600)
        options.sessionCheckInterval = .seconds(3600)
        let pool = PostgresPool(configuration: api.database.as(TestDatabase.appRole), options: .init(size: 2), logger: TestDatabase.logger)
        do {
            try await body(ChangeFeed(pool: pool, listenConfiguration: api.database, options: options, logger: TestDatabase.logger))
        } catch {
            try? await pool.close()
            throw error
        }
        try? await pool.close()
    }

    /// The diaries a subscription was woken for since it was last asked, its deliveries'
    /// included, once there are any; nil if none comes within 30 s.
    static func nextWake(_ subscription: ChangeSubscription) async -> Set<UUID>? {
        try? await waitForValue("a wake-up", within: .seconds(30)) { () -> Set<UUID>? in
            let arrival = subscription.takeArrival()
            let diaries = arrival.diaries.union(arrival.deliveries.map(\.diary))
            return diaries.isEmpty ? nil : diaries
        }
    }

    @Test("a socket learns of its user's join from another device, then the diary's posts, then its own removal")
    func ownJoinFromElsewhere() async throws {
        try await Self.live { api, port in try await Self.ownJoinPostAndDeparture(api, port: port) }
    }

    /// Bob's socket is open before he joins: the feed follows his diaries, not only its cursor's.
    static func ownJoinPostAndDeparture(_ api: APIHarness, port: Int) async throws {
        let tag = UUID().uuidString.prefix(8)
        let alice = try await api.signIn("rt-alice-\(tag)"), bob = try await api.signIn("rt-bob-\(tag)")
        let diary = try await api.createDiary("実時間", type: .family, token: alice.accessToken)
        let bobSocket = TestSocket(port: port, token: bob.accessToken)
        defer { bobSocket.close() }
        #expect(try await bobSocket.nextType() == "ready")
        #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
        let joined = try await bobSocket.event(.memberJoined)
        #expect(joined.diaryId == diary.id)
        if case .member(let member) = joined.data { #expect(member.userId == bob.user.id) } else { Issue.record("\(joined)") }
        let posted = try await api.post("届く?", in: diary.id, token: alice.accessToken).decode(Entry.self)
        #expect(try Self.entry(try await bobSocket.event(.entryCreated)).id == posted.id)
        #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(bob.user.id)", token: alice.accessToken).status == .noContent)
        #expect(try await bobSocket.event(.memberLeft).data == .memberLeft(DepartedMember(userId: bob.user.id)))
    }

    @Test("removal stops delivery after the member's own member.left; logout closes with 4401")
    func removalAndLogout() async throws {
        try await Self.live { api, port in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob")
            let diary = try await api.createDiary("家族", type: .family, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            let bobSocket = TestSocket(port: port, token: bob.accessToken)
            defer { bobSocket.close() }
            #expect(try await bobSocket.nextType() == "ready")
            #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(bob.user.id)", token: alice.accessToken).status == .noContent)
            #expect(try await bobSocket.event(.memberLeft).data == .memberLeft(DepartedMember(userId: bob.user.id)))
            _ = try await api.post("after bob", in: diary.id, token: alice.accessToken)
            await #expect(throws: (any Error).self) { _ = try await bobSocket.next(within: .seconds(2)) }

            let started = ContinuousClock.now
            #expect(try await api.call(.post, "/v1/auth/logout", token: bob.accessToken).status == .noContent)
            #expect(try await bobSocket.closeCode() == .unknown(4401))
            #expect(ContinuousClock.now - started < .seconds(5))
        }
    }

    @Test("an expiring token closes with 4401 unless renewed, and only by the same user")
    func expiryAndRenewal() async throws {
        try await Self.live { api, port in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob")
            let tokens = TokenService(key: try TokenService.loadKey(path: nil, dataDirectory: api.dataDirectory, production: false))
            let aliceIdentity = try await tokens.verifyAccessToken(alice.accessToken)
            func shortToken(_ identity: TokenService.Identity, seconds: Double) async throws -> String {
                try await tokens.accessToken(for: identity, issuedAt: Date().addingTimeInterval(seconds - TokenService.accessLifetime.totalSeconds))
            }
            let expiring = TestSocket(port: port, token: try await shortToken(aliceIdentity, seconds: 2))
            #expect(try await expiring.nextType() == "ready")
            #expect(try await expiring.closeCode(within: .seconds(6)) == .unknown(4401))

            let renewed = TestSocket(port: port, token: try await shortToken(aliceIdentity, seconds: 2))
            defer { renewed.close() }
            #expect(try await renewed.nextType() == "ready")
            renewed.send(.text(#"{"type":"auth","accessToken":"\#(alice.accessToken)"}"#))
            await #expect(throws: (any Error).self) { _ = try await renewed.next(within: .seconds(4)) }
            renewed.send(.text(#"{"type":"auth","accessToken":"\#(bob.accessToken)"}"#))
            #expect(try await renewed.closeCode() == .unknown(4401))
        }
    }

    @Test("a resync frame carries the cursor the socket goes on from: resuming there misses nothing after it and asks no resync")
    func resyncCarriesItsCursor() async throws {
        try await Self.live { api, port in
            let alice = try await api.signIn("alice")
            let diary = try await api.createDiary("一人", type: .couple, token: alice.accessToken)
            let first = TestSocket(port: port, query: "?since=not-a-cursor", token: alice.accessToken)
            #expect(try await first.nextType() == "ready")
            let frame = try #require(try await first.next())
            let object = try #require(try JSONSerialization.jsonObject(with: Data(frame.utf8)) as? [String: Any])
            #expect(object["type"] as? String == "resync")
            let cursor = try #require(object["cursor"] as? String, "\(frame)")
            let before = try await api.post("after the resync", in: diary.id, token: alice.accessToken).decode(Entry.self)
            #expect(try Self.entry(try await first.event(.entryCreated)).id == before.id)
            first.close()
            let away = try await api.post("while away", in: diary.id, token: alice.accessToken).decode(Entry.self)

            let resumed = TestSocket(port: port, query: "?since=\(cursor)", token: alice.accessToken)
            defer { resumed.close() }
            #expect(try await resumed.nextType() == "ready")
            #expect(try await resumed.nextType() == ChangeType.entryCreated.rawValue)
            #expect(try Self.entry(try await resumed.event(.entryCreated)).id == away.id)
        }
    }

    @Test("bad input: malformed text is ignored, binary closes 1003, a flood 1008, a big frame 1009, a bad since gets resync")
    func badInput() async throws {
        try await Self.live { api, port in
            let alice = try await api.signIn("alice")
            let resync = TestSocket(port: port, query: "?since=not-a-cursor", token: alice.accessToken)
            defer { resync.close() }
            #expect(try await resync.nextType() == "ready")
            #expect(try await resync.nextType() == "resync")
            resync.send(.text("{not json"))
            resync.send(.text(#"{"type":"unknown"}"#))
            await #expect(throws: (any Error).self) { _ = try await resync.next(within: .seconds(1)) }

            let binary = TestSocket(port: port, token: alice.accessToken)
            #expect(try await binary.nextType() == "ready")
            binary.send(.binary(3))
            #expect(try await binary.closeCode() == .unacceptableData)

            let flood = TestSocket(port: port, token: alice.accessToken)
            #expect(try await flood.nextType() == "ready")
            for _ in 0..<20 { flood.send(.text("{}")) }
            #expect(try await flood.closeCode() == .policyViolation)

            let big = TestSocket(port: port, token: alice.accessToken)
            #expect(try await big.nextType() == "ready")
            big.send(.text(String(repeating: "x", count: 17 * 1024)))
            #expect(try await big.closeCode() == .messageTooLarge)
        }
    }

    @Test("a client that stops reading is closed with 4408 and finds its frames and the close when it reads again")
    func slowConsumer() async throws {
        try await Self.live(slowConsumerGrace: .seconds(1)) { api, port in
            let alice = try await api.signIn("alice"), bob = try await api.signIn("bob")
            let diary = try await api.createDiary("二人", type: .couple, token: alice.accessToken)
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            // Only this test closes a socket with 4408: the server's count of them tells when it has.
            func slowConsumerCloses() async throws -> Int {
                let metrics = try await api.call(.get, "/metrics").text
                return metrics.split(separator: "\n").first { $0.hasPrefix(#"realtime_closes_total{code="4408"}"#) }
                    .flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
            }
            let closedBefore = try await slowConsumerCloses()
            let slow = TestSocket(port: port, token: bob.accessToken, paused: true)
            defer { slow.close() }
            try await slow.waitUntilConnected()
            // More than the socket's buffers hold: the server's kernel buffer (fixed), the
            // channel's, and the client's kernel buffer (not grown, as it is not read).
            let content = String(repeating: "長い日記。", count: 2000)
            for _ in 0..<60 { _ = try await api.post(content, in: diary.id, token: alice.accessToken) }
            try await waitUntil("the server closes the slow socket", within: .seconds(30)) { try await slowConsumerCloses() > closedBefore }
            slow.resume()
            #expect(try await slow.closeCode(within: .seconds(30)) == .unknown(4408))
        }
    }
}
