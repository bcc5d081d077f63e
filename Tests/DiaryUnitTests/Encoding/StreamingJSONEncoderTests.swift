import DiaryModels
import Foundation
import PostgresClient
import Testing

@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// Responses are written by `StreamingJSONEncoder`; clients must read exactly what
/// Foundation's JSONEncoder (with the server's settings) would have sent them.
@Suite("Streaming JSON encoder")
struct StreamingJSONEncoderTests {
    static let awkward = "\"quoted\" \\ back/slash\n\t\r\u{1}\u{1F} ずっと日記 💌 </script>"
    static let moment = Date(timeIntervalSince1970: 1_795_000_000.123456)

    static var entry: Entry {
        Entry(
            id: UUID(), diaryId: UUID(),
            author: .init(id: UUID(), displayName: awkward, profileImageUrl: nil),
            content: awkward, question: "今日は？", images: ["a.jpg", awkward],
            photos: [Photo(id: UUID(), contentType: "image/jpeg", bytes: 2_097_152, width: 4032, height: 3024,
                           url: "/v1/photos/x?exp=1&sig=\(awkward)", urlExpiresAt: moment)],
            createdAt: moment, updatedAt: moment.addingTimeInterval(1),
            readBy: [.init(userId: UUID(), readAt: moment), .init(userId: UUID(), readAt: moment.addingTimeInterval(-3600))],
            isMine: true
        )
    }

    /// The other branch of every optional and list of `entry`.
    static var plainEntry: Entry {
        Entry(
            id: UUID(), diaryId: UUID(), author: .init(id: UUID(), displayName: "A", profileImageUrl: "https://example.com/a.png"),
            content: "x", question: nil, images: [], createdAt: moment, updatedAt: moment, readBy: [], isMine: false
        )
    }

    static var me: Me {
        Me(id: UUID(), displayName: awkward, profileImageUrl: "https://example.com/a.png", settings: UserSettings(),
           timeZone: "Asia/Tokyo", isPremium: false, premiumExpiresAt: nil, createdAt: moment)
    }

    static var diary: Diary {
        Diary(id: UUID(), name: awkward, type: .anonymous, inviteCode: "ABCDE-FGHJK", inviteUrl: "https://diary.example/i/ABCDE-FGHJK", role: .owner, memberCount: 2,
              members: [.init(userId: UUID(), displayName: "匿名1", profileImageUrl: nil, role: .owner, joinedAt: moment)],
              createdAt: moment, lastEntryAt: nil, unreadCount: 0)
    }

    /// The other branch of every optional and list of `diary`.
    static var fullDiary: Diary {
        Diary(id: UUID(), name: "家族", type: .family, inviteCode: "ABCDE-FGHJK", inviteUrl: "https://diary.example/i/ABCDE-FGHJK", role: .member, memberCount: 10,
              members: [.init(userId: UUID(), displayName: awkward, profileImageUrl: "https://example.com/a.png", role: .member, joinedAt: moment),
                        .init(userId: UUID(), displayName: "B", profileImageUrl: nil, role: .owner, joinedAt: moment.addingTimeInterval(60))],
              createdAt: moment, lastEntryAt: moment.addingTimeInterval(3600), unreadCount: 12_345)
    }

    @Test("every response type parses to the same JSON as JSONEncoder's")
    func sameJSONAsFoundation() throws {
        try expectSame(EntryPage(entries: [Self.entry, Self.plainEntry], nextCursor: "abc_-"))
        try expectSame(Self.plainEntry)
        try expectSame(EntryPage(entries: [], nextCursor: nil))
        try expectSame(Self.entry)
        try expectSame(ReadList(reads: Self.entry.readBy))
        try expectSame(Self.me)
        try expectSame(Session(accessToken: "a.b.c", refreshToken: Self.awkward, expiresIn: 900, user: Self.me))
        try expectSame(Self.diary)
        try expectSame(DiaryList(diaries: [Self.diary, Self.fullDiary]))
        try expectSame(Self.fullDiary)
        try expectSame(MemberList(members: Self.diary.members))
        try expectSame(InviteCodeResponse(inviteCode: "ABCDE-FGHJK", inviteUrl: "https://diary.example/i/ABCDE-FGHJK"))
        try expectSame(TodayQuestion(date: "2026-11-22", question: Self.awkward))
        try expectSame(["numbers": [0, -1, Int.max], "more": [7]])
        try expectSame([[1], [], [2, 3]])
        try expectSame([1.5, -0.25, 3, 1e300])
        try expectSame(NestedContainers())
    }

    /// Nested containers are left open by `encode(to:)`; each must close before the next member.
    struct NestedContainers: Encodable {
        enum Keys: String, CodingKey { case point, list, after, parent }
        enum PointKeys: String, CodingKey { case x, y }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            var point = container.nestedContainer(keyedBy: PointKeys.self, forKey: .point)
            try point.encode(1, forKey: .x)
            try point.encode(UInt8(2), forKey: .y)
            var list = container.nestedUnkeyedContainer(forKey: .list)
            try list.encode(true)
            try list.encodeNil()
            var inner = list.nestedUnkeyedContainer()
            try inner.encode(Int16(-3))
            var pair = list.nestedContainer(keyedBy: PointKeys.self)
            try pair.encode("x", forKey: .x)
            try container.encode(StreamingJSONEncoderTests.moment, forKey: .after)
            try ["in super"].encode(to: container.superEncoder(forKey: .parent))
        }
    }

    @Test("the hand-written writers give byte for byte what the Codable path writes")
    func handWrittenMatchCodable() throws {
        func codable(_ value: some Encodable) throws -> String {
            let output = JSONOutput()
            try output.write(value)
            return String(decoding: output.bytes, as: UTF8.self)
        }
        func handWritten(_ value: some JSONWritable) -> String {
            let output = JSONOutput()
            value.writeJSON(to: output)
            return String(decoding: output.bytes, as: UTF8.self)
        }
        for page in [EntryPage(entries: [Self.entry, Self.plainEntry], nextCursor: "abc"), EntryPage(entries: [], nextCursor: nil)] {
            #expect(handWritten(page) == (try codable(page)))
        }
        for entry in [Self.entry, Self.plainEntry] {
            #expect(handWritten(entry) == (try codable(entry)))
        }
        for list in [DiaryList(diaries: [Self.diary, Self.fullDiary]), DiaryList(diaries: [])] {
            #expect(handWritten(list) == (try codable(list)))
        }
        for diary in [Self.diary, Self.fullDiary] {
            #expect(handWritten(diary) == (try codable(diary)))
        }
    }

    @Test("text escapes every control character, quote and backslash, and keeps other characters as UTF-8")
    func escaping() throws {
        let bytes = try StreamingJSONEncoder().encode(["k": "a\"b\\c\n\u{0}\u{1F}日"])
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"k":"a\"b\\c\n\u0000\u001f日"}"#)
    }

    @Test("a non-finite number is an error, as with JSONEncoder")
    func nonFiniteIsAnError() {
        #expect(throws: EncodingError.self) { try StreamingJSONEncoder().encode([Double.nan]) }
    }

    private func expectSame(_ value: some Encodable, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let streamed = try Self.canonical(Data(try StreamingJSONEncoder().encode(value)))
        let foundation = try Self.canonical(try PostgresJSONCoding.encoder.encode(value))
        #expect(streamed == foundation, "\(streamed)\nversus\n\(foundation)", sourceLocation: sourceLocation)
    }

    /// The same JSON in one spelling: parsed, then written again with sorted keys.
    static func canonical(_ json: Data) throws -> String {
        let object = try JSONSerialization.jsonObject(with: json, options: [.fragmentsAllowed])
        return String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .fragmentsAllowed]), as: UTF8.self)
    }
}
