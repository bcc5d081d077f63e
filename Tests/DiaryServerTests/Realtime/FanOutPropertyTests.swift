@testable import DiaryCore
import DiaryModels
@testable import DiaryHTTP
import Foundation
import PostgresClient
import Testing
import TestSupport

/// The fan-out held to delta sync under random interleavings (issue 63): posts, edits,
/// deletions, photos added and removed, reads, joins, leaves, removals by the owner, renames,
/// sign-outs and account deletions, with every user's socket open from the start and one of
/// them paused until the end. Once the run quiesces, each socket's events are what delta sync
/// gives its user from the socket's first cursor under their own policies, but for changes
/// whose subject is gone since (delivered before it went, which delta sync leaves out). A
/// user who departs gets at most delta sync as it stood before their departure (what their
/// socket had not read by then, they may no longer read), then their own `member.left`; one
/// whose session ends (sign-out, account deletion) at most delta sync as it stood before: no
/// frame after the revocation. `make test` runs fixed seeds: 6 and 11 found a read whose
/// `authenticate()` and statement saw different members (now one snapshot);
/// `make test-fanout-property` more seeds and steps (FANOUT_SEEDS, FANOUT_STEPS), and
/// `FANOUT_DEBUG=1` prints each socket's frames.
@Suite("Realtime fan-out under random interleavings", .serialized)
struct FanOutPropertyTests {
    static var seeds: [UInt64] {
        (ProcessInfo.processInfo.environment["FANOUT_SEEDS"] ?? "20261207,6,11").split(separator: ",").compactMap { UInt64($0) }
    }

    static var steps: Int { Int(ProcessInfo.processInfo.environment["FANOUT_STEPS"] ?? "") ?? 60 }

    /// What a user's socket must show once the run quiesces.
    enum Expected {
        /// Delta sync at the end, from the socket's first cursor.
        case live
        /// A prefix of these, delta sync before their departure, then their own departure.
        case departed([ChangeEvent])
        /// At most a prefix of these: delta sync before their session ended.
        case ended([ChangeEvent])
    }

    final class User: @unchecked Sendable {
        let name: String
        var session: Session
        var socket: TestSocket?
        var start: String?
        var member = false
        var expected = Expected.live
        var entries: [UUID] = []
        /// Not to depart nor end: its socket stays paused until the end.
        let paused: Bool

        init(_ name: String, session: Session, paused: Bool) {
            self.name = name
            self.session = session
            self.paused = paused
        }

        var active: Bool { if case .live = expected { true } else { false } }
    }

    /// An event as the comparison sees it: its cursor, its kind, its subject and whose it is.
    /// A subject renders as it stands when its change is read (a later edit, rename or read
    /// shows in delta sync, not in a frame written before), so its contents are not compared.
    static func key(_ event: ChangeEvent) -> String {
        let subject: String = switch event.data {
        case .entry(let entry): "\(entry.id) mine=\(entry.isMine) by \(entry.author.id)"
        case .entryDeleted(let deleted): "\(deleted.id)"
        case .entryRead(let read): "\(read.entryId) read by \(read.userId)"
        case .member(let member): "\(member.userId) \(member.role)"
        case .memberLeft(let departed): "\(departed.userId)"
        case .diary(let diary): "\(diary.id)"
        }
        return "\(event.id) \(event.type.rawValue) \(event.diaryId) \(subject)"
    }

    static func events(_ socket: TestSocket) -> [ChangeEvent] {
        socket.frames.withLockedValue { $0 }.compactMap { try? PostgresJSONCoding.decoder.decode(ChangeEvent.self, from: Data($0.utf8)) }
    }

    /// What is gone by the end, by delta sync or the socket: deleted entries and departed
    /// members, whose earlier changes a socket may have had before they went.
    static func gone(_ events: [ChangeEvent]) -> Set<UUID> {
        Set(events.compactMap {
            switch $0.data {
            case .entryDeleted(let deleted): deleted.id
            case .memberLeft(let departed): departed.userId
            default: nil
            }
        })
    }

    /// The events but those about a subject gone by the end, which delta sync leaves out and a
    /// socket had only if it read them before the subject went.
    static func kept(_ events: [ChangeEvent], gone: Set<UUID>) -> [String] {
        events.filter { event in
            switch event.data {
            // An author who left since shows as departed in delta sync, by name in a frame written before.
            case .entry(let entry): !gone.contains(entry.id) && !gone.contains(entry.author.id) && entry.author.id != EntryRepository.departedAuthorID
            case .entryRead(let read): !gone.contains(read.entryId) && !gone.contains(read.userId)
            case .member(let member): !gone.contains(member.userId)
            default: true
            }
        }.map(key)
    }

    static func deltaSync(_ api: APIHarness, _ diary: UUID, _ user: User) async throws -> [ChangeEvent] {
        var events: [ChangeEvent] = []
        var cursor = try #require(user.start)
        while true {
            let reply = try await api.call(.get, "/v1/diaries/\(diary)/changes?since=\(cursor)&limit=500", token: user.session.accessToken)
            try #require(reply.status == .ok, "\(user.name): \(reply.text)")
            let page = try reply.decode(ChangeList.self)
            events += page.changes
            cursor = page.nextCursor
            if !page.hasMore { return events }
        }
    }

    @Test("each socket's events are its user's delta sync, whatever the interleaving", arguments: FanOutPropertyTests.seeds)
    func socketsAreDeltaSync(_ seed: UInt64) async throws {
        try await RealtimeTests.live { api, port in try await Self.check(seed: seed, api, port: port) }
    }

    /// One run of `seed`, its users new accounts named by the seed and `tag` (a database
    /// that other runs share, as the cluster's, needs a tag of its own).
    static func check(seed: UInt64, _ api: APIHarness, port: Int, tag: String = "") async throws {
        do {
            var random = SplitMix64(seed: seed)
            let names = ["owner", "paused", "member", "guest", "visitor", "late"]
            var users: [User] = []
            for (index, name) in names.enumerated() {
                users.append(User(name, session: try await api.signIn("\(name)-\(seed)\(tag)"), paused: index == 1))
            }
            let owner = users[0]
            let diary = try await api.createDiary("家族", type: .family, token: owner.session.accessToken)
            owner.member = true
            for user in users[1...3] {
                #expect(try await api.join(diary.inviteCode, token: user.session.accessToken).status == .ok)
                user.member = true
            }
            for user in users {
                let socket = TestSocket(port: port, token: user.session.accessToken, paused: user.paused)
                user.socket = socket
                if !user.paused {
                    let ready = try #require(try await socket.next())
                    user.start = try #require((try JSONSerialization.jsonObject(with: Data(ready.utf8)) as? [String: Any])?["cursor"] as? String)
                }
            }
            defer { for user in users { user.socket?.close() } }
            var log: [String] = []
            let entryPath = { (entry: UUID) in "/v1/diaries/\(diary.id)/entries/\(entry)" }

            for step in 0..<Self.steps {
                let members = users.filter { $0.member && $0.active }
                let departable = members.filter { $0 !== owner && !$0.paused }
                let writers = members.filter { !$0.entries.isEmpty }
                var choices = ["post", "post", "read", "rename"]
                if !writers.isEmpty { choices += ["edit", "delete", "photo", "unphoto"] }
                if users.contains(where: { !$0.member && $0.active && $0.start != nil }) { choices.append("join") }
                if !departable.isEmpty { choices += ["leave", "remove", "signout", "delete account"] }
                let choice = choices.randomElement(using: &random)!
                let author = (writers.isEmpty ? members : writers).randomElement(using: &random)!
                log.append("\(step): \(choice)")
                switch choice {
                case "post":
                    let poster = members.randomElement(using: &random)!
                    let entry = try await api.post("\(poster.name) \(step)", in: diary.id, token: poster.session.accessToken).decode(Entry.self)
                    poster.entries.append(entry.id)
                case "edit":
                    let entry = author.entries.randomElement(using: &random)!
                    #expect(try await api.call(.patch, entryPath(entry), token: author.session.accessToken, json: #"{"content":"書き直し \#(step)"}"#).status == .ok)
                case "delete":
                    let index = Int.random(in: 0..<author.entries.count, using: &random)
                    #expect(try await api.call(.delete, entryPath(author.entries.remove(at: index)), token: author.session.accessToken).status == .noContent)
                case "photo":
                    let photo = try await EntryPhotoTests.upload(api, author.session)
                    let entry = author.entries.randomElement(using: &random)!
                    let reply = try await api.call(.patch, entryPath(entry), token: author.session.accessToken, json: #"{"photoIds":["\#(photo.id.canonicalText)"]}"#)
                    #expect(reply.status == .ok, "\(reply.text)")
                case "unphoto":
                    let entry = author.entries.randomElement(using: &random)!
                    #expect(try await api.call(.patch, entryPath(entry), token: author.session.accessToken, json: #"{"photoIds":[]}"#).status == .ok)
                case "read":
                    let others = members.flatMap { reader in users.filter { $0 !== reader }.flatMap(\.entries).map { (reader, $0) } }
                    guard let (reader, entry) = others.randomElement(using: &random) else { continue }
                    let status = try await api.call(.post, "\(entryPath(entry))/read", token: reader.session.accessToken).status
                    #expect(status == .noContent || status == .notFound, "\(status)")
                case "rename":
                    #expect(try await api.call(.patch, "/v1/diaries/\(diary.id)", token: owner.session.accessToken, json: #"{"name":"家族 \#(step)"}"#).status == .ok)
                case "join":
                    let joiner = users.filter { !$0.member && $0.active && $0.start != nil }.randomElement(using: &random)!
                    #expect(try await api.join(diary.inviteCode, token: joiner.session.accessToken).status == .ok)
                    joiner.member = true
                default:
                    let target = departable.randomElement(using: &random)!
                    log[log.count - 1] += " " + target.name
                    let before = try await Self.deltaSync(api, diary.id, target)
                    switch choice {
                    case "leave", "remove":
                        let by = choice == "leave" ? target : owner
                        #expect(try await api.call(.delete, "/v1/diaries/\(diary.id)/members/\(target.session.user.id)", token: by.session.accessToken).status == .noContent)
                        target.expected = .departed(before)
                        target.member = false
                    case "signout":
                        #expect(try await api.call(.post, "/v1/auth/logout", token: target.session.accessToken).status == .noContent)
                        target.expected = .ended(before)
                    default:
                        #expect(try await api.call(.delete, "/v1/me", token: target.session.accessToken).status == .noContent)
                        target.expected = .ended(before)
                        target.member = false
                    }
                    target.entries = choice == "delete account" ? [] : target.entries
                }
            }

            // Quiet: the paused socket reads at last, and each socket is held to its oracle.
            let paused = users[1]
            paused.socket?.resume()
            let ready = try #require(try await paused.socket?.next())
            paused.start = try #require((try JSONSerialization.jsonObject(with: Data(ready.utf8)) as? [String: Any])?["cursor"] as? String)
            for user in users {
                let socket = try #require(user.socket)
                if ProcessInfo.processInfo.environment["FANOUT_DEBUG"] != nil {
                    print("DEBUG seed \(seed) \(user.name) \(user.session.user.id) expected \(user.expected), finished \(socket.isFinished) \(socket.isFinished ? "\(String(describing: try? await socket.closeCode()))" : "")\n  frames: \(socket.frames.withLockedValue { $0 }.joined(separator: "\n    "))\n  steps: \(log)")
                }
                switch user.expected {
                case .live:
                    guard user.member else {
                        #expect(Self.events(socket).isEmpty, "\(user.name) was never in the diary")
                        continue
                    }
                    let delta = try await Self.deltaSync(api, diary.id, user)
                    if user.paused, socket.isFinished {
                        // Paused past the slow consumer's grace: closed with 4408, having written a prefix.
                        #expect(try await socket.closeCode() == .unknown(4408), "\(user.name)")
                        let socketEvents = Self.events(socket), gone = Self.gone(delta + socketEvents)
                        let shown = Self.kept(socketEvents, gone: gone), expected = Self.kept(delta, gone: gone)
                        #expect(shown.count <= expected.count && shown.elementsEqual(expected.prefix(shown.count)), "seed \(seed), \(user.name): \(log)")
                        continue
                    }
                    let last = try #require(delta.last?.id, "\(user.name): delta sync has changes")
                    try await waitUntil("\(user.name)'s socket reaches delta sync's last change", within: .seconds(30)) {
                        Self.events(socket).contains { $0.id == last }
                    }
                    let socketEvents = Self.events(socket), gone = Self.gone(delta + socketEvents)
                    #expect(Self.kept(socketEvents, gone: gone) == Self.kept(delta, gone: gone), "seed \(seed), \(user.name): \(log)")
                case .departed(let before):
                    try await waitUntil("\(user.name)'s own departure", within: .seconds(30)) {
                        Self.events(socket).contains { $0.type == .memberLeft && $0.data == .memberLeft(DepartedMember(userId: user.session.user.id)) }
                    }
                    let socketEvents = Self.events(socket), gone = Self.gone(before + socketEvents).subtracting([user.session.user.id])
                    // What the socket had not read when the departure committed, it may no longer read.
                    let shown = Self.kept(socketEvents, gone: gone).dropLast(), expected = Self.kept(before, gone: gone)
                    #expect(shown.count <= expected.count && shown.elementsEqual(expected.prefix(shown.count)) && socketEvents.last?.type == .memberLeft,
                            "seed \(seed), \(user.name): what they could read, then their own departure, then nothing: \(log)")
                case .ended(let before):
                    #expect(try await socket.closeCode(within: .seconds(30)) == .unknown(4401), "\(user.name)")
                    let socketEvents = Self.events(socket), gone = Self.gone(before + socketEvents)
                    let shown = Self.kept(socketEvents, gone: gone), expected = Self.kept(before, gone: gone)
                    #expect(shown.count <= expected.count && shown.elementsEqual(expected.prefix(shown.count)),
                            "seed \(seed), \(user.name): no frame after the session ended: \(log)")
                }
            }
        }
    }
}
