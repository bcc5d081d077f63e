@testable import DiaryCore
import DiaryModels
import Foundation
import Testing

/// index.html of a diary's export: escaping, days in the requester's time zone, and the book in
/// a real browser, offline, with its photos.
@Suite("Export book")
struct ExportBookTests {
    // MARK: Escaping

    @Test("user text is escaped everywhere and the book points nowhere outside itself")
    func escapesUserText() {
        let mother = Self.member("母 \"ママ\" & 'おかあさん'", role: .owner)
        let diary = Self.diary(name: #"<b>家族</b> "日記" & 'メモ'"#, members: [mother])
        var book = ExportBook(diary: diary, exportedAt: Self.at("2026-11-05T00:00:00Z"), timeZone: "Asia/Tokyo")
        let entry = Self.entry(
            by: mother, at: "2026-11-03T10:00:00Z", localDate: "2026-11-03", content: "<script>alert(1)</script> & <img src=x onerror=alert(2)>",
            question: "<i>今日は?</i>", photos: ["photos/a\"b.png", "https://example.com/x.png", "photos/../../etc/passwd"], readBy: [mother.userId])
        let html = book.opening() + book.page(for: entry) + book.closing(entryCount: 1)

        #expect(html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(2)&gt;"))
        #expect(html.contains("&lt;b&gt;家族&lt;/b&gt; &quot;日記&quot; &amp; &#39;メモ&#39;"))
        #expect(html.contains("母 &quot;ママ&quot; &amp; &#39;おかあさん&#39;"))
        #expect(html.contains("&lt;i&gt;今日は?&lt;/i&gt;"))
        #expect(html.contains(#"<img src="photos/a&quot;b.png" alt="" loading="eager">"#))
        #expect(!html.localizedCaseInsensitiveContains("<script"))
        #expect(!html.contains("<b>") && !html.contains("<i>") && !html.contains("onerror=alert(2)>"))
        #expect(!html.contains("http://") && !html.contains("https://") && !html.contains("//example.com"))
        #expect(!html.contains("etc/passwd"))
        #expect(html.hasPrefix("<!doctype html>\n<html lang=\"ja\">"))
        #expect(html.contains("<meta charset=\"utf-8\">"))
    }

    // MARK: Days

    /// 16:30 UTC on 3 November is 01:30 on the 4th in Tokyo (UTC+9) and 08:30 on the 3rd in
    /// Los Angeles (UTC−8, daylight saving over since 1 November).
    @Test(
        "a day heading opens whenever the requester's local date changes",
        arguments: [
            ("Asia/Tokyo", ["2026-11-03", "2026-11-04", "2026-11-05"], ["19:00", "01:30", "05:00"],
             ["2026年11月3日<span class=\"weekday\">（火）", "2026年11月4日<span class=\"weekday\">（水）", "2026年11月5日<span class=\"weekday\">（木）"],
             [0, 1, 2]),
            ("America/Los_Angeles", ["2026-11-03", "2026-11-03", "2026-11-04"], ["02:00", "08:30", "12:00"],
             ["2026年11月3日<span class=\"weekday\">（火）", "2026年11月4日<span class=\"weekday\">（水）"],
             [0, 0, 1]),
        ])
    func groupsByLocalDay(zone: String, localDates: [String], times: [String], headings: [String], dayOfEntry: [Int]) throws {
        let author = Self.member("ゆい", role: .member)
        var book = ExportBook(diary: Self.diary(name: "日記", members: [author]), exportedAt: Self.at("2026-11-06T00:00:00Z"), timeZone: zone)
        let instants = ["2026-11-03T10:00:00Z", "2026-11-03T16:30:00Z", "2026-11-04T20:00:00Z"]
        let entries = zip(instants, localDates).enumerated().map { index, pair in
            Self.entry(by: author, at: pair.0, localDate: pair.1, content: "本文その\(index)")
        }
        let html = book.opening() + entries.map { book.page(for: $0) }.joined() + book.closing(entryCount: entries.count)

        let found = html.matches(of: /<h2 class="day-heading"><time datetime="[0-9-]+">([^<]+<span class="weekday">[^<]+)/).map { String($0.1) }
        #expect(found == headings)
        #expect(html.components(separatedBy: "<section class=\"day\">").count - 1 == headings.count)
        #expect(html.components(separatedBy: "</section>").count - 1 == headings.count)
        // Each entry sits under its own day's heading, before the next day's, at its local time.
        let headingStarts = try headings.map { try #require(html.range(of: $0)).lowerBound }
        for (index, day) in dayOfEntry.enumerated() {
            let entryStart = try #require(html.range(of: "本文その\(index)")).lowerBound
            #expect(headingStarts[day] < entryStart)
            if day + 1 < headingStarts.count { #expect(entryStart < headingStarts[day + 1]) }
            #expect(html.contains(">\(times[index])</time>"))
        }
    }

    // MARK: A real browser

    @Test("the book renders offline in headless Chromium with every entry and photo")
    func rendersInChromium() async throws {
        _ = try HeadlessChromium.binary()  // fails, with how to install it, when Chromium is missing
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("diary-export-book")
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("photos"), withIntermediateDirectories: true)

        let mother = Self.member("母", role: .owner)
        let father = Self.member("父", role: .member)
        let yui = Self.member("ゆい", role: .member)
        let photos: [(String, [UInt8])] = [
            ("photos/\(UUID().uuidString.lowercased()).png", TestImages.png(width: 480, height: 320)),
            ("photos/\(UUID().uuidString.lowercased()).jpg", TestImages.jpeg(width: 320, height: 240)),
            ("photos/\(UUID().uuidString.lowercased()).webp", TestImages.webpLossless(width: 240, height: 240)),
        ]
        for (path, bytes) in photos { try Data(bytes).write(to: folder.appendingPathComponent(path)) }
        let entries = [
            Self.entry(
                by: mother, at: "2026-11-03T08:00:00Z", localDate: "2026-11-03",
                content: "夕方、ゆいと公園まで歩いた。\n銀杏がまっ黄色で、ふたりで落ち葉をたくさん集めた。",
                question: "今日いちばん嬉しかったことは？", photos: [photos[0].0], readBy: [father.userId, yui.userId]),
            Self.entry(
                by: father, at: "2026-11-03T16:30:00Z", localDate: "2026-11-04",
                content: "遅くなってしまった。明日の朝ごはんは僕が作ります。", readBy: [mother.userId, UUID()]),
            Self.entry(
                by: yui, at: "2026-11-04T09:15:00Z", localDate: "2026-11-04", content: "算数のテストで100点！\n\nお父さんのオムレツ、おいしかった。",
                photos: [photos[1].0, photos[2].0]),
        ]
        let diary = Self.diary(name: "わが家の交換日記", type: .family, members: [mother, father, yui])
        var book = ExportBook(diary: diary, exportedAt: Self.at("2026-11-05T12:00:00Z"), timeZone: "Asia/Tokyo")
        // Written piece by piece, as the export streams it.
        let index = folder.appendingPathComponent("index.html")
        _ = FileManager.default.createFile(atPath: index.path, contents: nil)
        let file = try FileHandle(forWritingTo: index)
        try file.write(contentsOf: Data(book.opening().utf8))
        for entry in entries { try file.write(contentsOf: Data(book.page(for: entry).utf8)) }
        try file.write(contentsOf: Data(book.closing(entryCount: entries.count).utf8))
        try file.close()

        let rendered = try await HeadlessChromium.render(indexHTML: index, screenshot: folder.appendingPathComponent("screenshot.png"))

        for entry in entries {
            #expect(rendered.dom.contains(entry.content), "entry \(entry.id) is not in the rendered DOM")
            #expect(rendered.dom.contains(entry.author.displayName))
        }
        for text in ["今日いちばん嬉しかったことは？", "既読", "父、ゆい", "母、元メンバー", "2026年11月3日", "2026年11月4日", "わが家の交換日記", "家族"] {
            #expect(rendered.dom.contains(text), "\(text) is not in the rendered DOM")
        }
        #expect(rendered.images.map(\.src) == photos.map(\.0))
        #expect(rendered.unloadedImages.isEmpty, "images the browser did not load: \(rendered.unloadedImages)")
        #expect(rendered.images.map(\.naturalWidth) == [480, 320, 240])
        let screenshot = try Data(contentsOf: rendered.screenshot)
        #expect(screenshot.count > 1000)
        #expect(screenshot.starts(with: [0x89, 0x50, 0x4E, 0x47]), "the screenshot is not a PNG")
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("check.html").path))
    }

    // MARK: README.txt

    @Test("each README names every file of its archive, Japanese first")
    func readmesNameEveryFile() throws {
        let exportedAt = Self.at("2026-11-05T09:30:00Z")
        let diary = ExportReadme.diary(name: "わが家の交換日記", exportedAt: exportedAt)
        let personal = ExportReadme.personal(exportedAt: exportedAt)
        for file in ["index.html", "diary.json", "entries.json", "photos/", "README.txt", "localDate", "readBy", "UTF-8", "WebP"] {
            #expect(diary.contains(file), "the diary README does not mention \(file)")
        }
        for file in ["profile.json", "memberships.json", "entries.json", "reads.json", "billing.json", "photos/", "README.txt", "UTF-8", "WebP"] {
            #expect(personal.contains(file), "the personal README does not mention \(file)")
        }
        for readme in [diary, personal] {
            #expect(readme.contains("2026-11-05T09:30:00Z"))
            let japanese = try #require(readme.range(of: "■ 日本語")), english = try #require(readme.range(of: "■ English"))
            #expect(japanese.lowerBound < english.lowerBound)
        }
        #expect(diary.contains("わが家の交換日記"))
    }

    // MARK: Fixtures

    static func at(_ iso: String) -> Date {
        try! Date(iso, strategy: .iso8601)
    }

    static func member(_ name: String, role: MemberRole) -> Member {
        Member(userId: UUID(), displayName: name, profileImageUrl: nil, role: role, joinedAt: at("2026-01-01T00:00:00Z"))
    }

    static func diary(name: String, type: DiaryType = .couple, members: [Member]) -> Diary {
        Diary(
            id: UUID(), name: name, type: type, inviteCode: "ABCD1234", inviteUrl: "https://diary.example/i/ABCD1234", role: .owner, memberCount: members.count, members: members,
            createdAt: at("2026-01-01T00:00:00Z"), lastEntryAt: nil, unreadCount: 0)
    }

    static func entry(
        by author: Member, at instant: String, localDate: String, content: String, question: String? = nil, photos: [String] = [], readBy: [UUID] = []
    ) -> ExportedEntry {
        ExportedEntry(
            id: UUID(), author: Entry.Author(id: author.userId, displayName: author.displayName, profileImageUrl: nil), content: content,
            question: question, photos: photos, readBy: readBy.map { ReadReceipt(userId: $0, readAt: at(instant)) },
            createdAt: at(instant), updatedAt: at(instant), localDate: localDate)
    }
}
