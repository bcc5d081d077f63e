package import DiaryModels
package import Foundation

/// index.html of a diary's export: the whole diary as a self-contained, printable book.
///
/// The export writes it in pieces (`opening`, one `page` per entry, oldest first, then
/// `closing`), so a diary of any length streams in constant memory. The book needs no script,
/// no network and no server: plain HTML with inline CSS, photos from the archive's photos/
/// folder, Japanese text in the system's fonts. A Content-Security-Policy holds it to that in
/// every browser that reads one, whatever a future change writes into the page.
package struct ExportBook: Sendable {
    private let diary: Diary
    private let exportedAt: Date
    private let timeZoneName: String
    private let calendar: Calendar
    /// Readers' display names, by the id a read receipt carries.
    private let names: [UUID: String]
    /// The day whose section is open; nil before the first entry.
    private var openDay: String?

    package init(diary: Diary, exportedAt: Date, timeZone: String) {
        self.diary = diary
        self.exportedAt = exportedAt
        self.timeZoneName = timeZone
        // The calendar localDate comes from too, so a day's times match its heading.
        self.calendar = LocalCalendar(zoneName: timeZone).calendar
        self.names = Dictionary(diary.members.map { ($0.userId, $0.displayName) }, uniquingKeysWith: { first, _ in first })
    }

    package func opening() -> String {
        let name = Self.escape(diary.name)
        let members = diary.members.map { member in
            let role = member.role == .owner ? "<span class=\"role\">作成者</span>" : ""
            return "<li>\(Self.avatar(member.profileImageUrl))\(Self.escape(member.displayName))\(role)</li>"
        }.joined()
        return """
            <!doctype html>
            <html lang="ja">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src 'self' file:; style-src 'unsafe-inline'">
            <title>\(name) — 交換日記</title>
            <style>\(Self.style)</style>
            </head>
            <body>
            <main class="book">
            <header class="cover">
            <p class="kind">\(Self.label(diary.type))の交換日記</p>
            <h1>\(name)</h1>
            <ul class="members">\(members)</ul>
            <p class="exported"><time datetime="\(Self.isoMinute(exportedAt, calendar))">\(longDate(exportedAt))</time>に書き出し（時刻は\(Self.escape(timeZoneName))）</p>
            </header>

            """
    }

    package mutating func page(for entry: ExportedEntry) -> String {
        var html = ""
        if entry.localDate != openDay {
            if openDay != nil { html += "</section>\n" }
            openDay = entry.localDate
            html += "<section class=\"day\">\n<h2 class=\"day-heading\">\(dayHeading(entry.localDate))</h2>\n"
        }
        let time = calendar.dateComponents([.hour, .minute], from: entry.createdAt)
        let clock = "\(Self.pad(time.hour ?? 0)):\(Self.pad(time.minute ?? 0))"
        html += "<article class=\"entry\" id=\"entry-\(entry.id.uuidString.lowercased())\">\n"
        html += "<p class=\"byline\">\(Self.avatar(entry.author.profileImageUrl))<span class=\"author\">\(Self.escape(entry.author.displayName))</span>"
        html += "<time datetime=\"\(Self.isoMinute(entry.createdAt, calendar))\">\(clock)</time></p>\n"
        if let question = entry.question, !question.isEmpty {
            html += "<p class=\"question\"><span class=\"question-mark\">今日の質問</span>\(Self.escape(question))</p>\n"
        }
        // No whitespace between the tags and the text: white-space: pre-wrap shows it.
        html += "<div class=\"content\">\(Self.escape(entry.content))</div>\n"
        // Only paths inside the archive's photos/ folder: the book never points outside itself.
        let photos = entry.photos.filter(Self.isArchivePath)
        if !photos.isEmpty {
            html += "<div class=\"photos\">"
            html += photos.map { "<img src=\"\(Self.escape($0))\" alt=\"\" loading=\"eager\">" }.joined()
            html += "</div>\n"
        }
        if !entry.readBy.isEmpty {
            // A reader who has left the diary is no longer among its members.
            let readers = entry.readBy.map { Self.escape(names[$0.userId] ?? "元メンバー") }.joined(separator: "、")
            html += "<p class=\"read\"><span class=\"read-mark\">既読</span>\(readers)</p>\n"
        }
        html += "</article>\n"
        return html
    }

    /// Only paths inside the archive's photos/ folder: the book never points outside itself.
    static func isArchivePath(_ path: String) -> Bool {
        path.hasPrefix("photos/") && !path.contains("..") && !path.contains(":")
    }

    /// A profile photo beside a name, when the archive carries one.
    static func avatar(_ path: String?) -> String {
        guard let path, isArchivePath(path) else { return "" }
        return "<img class=\"avatar\" src=\"\(escape(path))\" alt=\"\" loading=\"eager\">"
    }

    package func closing(entryCount: Int) -> String {
        let close = openDay == nil ? "" : "</section>\n"
        let empty = entryCount == 0 ? "<p class=\"empty\">まだ日記はありません。</p>\n" : ""
        return """
            \(close)\(empty)<footer class="colophon">
            <p>全\(entryCount)件 · \(Self.escape(diary.name)) · \(longDate(exportedAt))書き出し</p>
            </footer>
            </main>
            </body>
            </html>

            """
    }

    // MARK: Text

    /// Escapes the five characters that matter in HTML text and in quoted attributes.
    package static func escape(_ text: String) -> String {
        var out = ""
        out.unicodeScalars.reserveCapacity(text.unicodeScalars.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    static func label(_ type: DiaryType) -> String {
        switch type {
        case .couple: "ふたり"
        case .family: "家族"
        case .friends: "友だち"
        case .anonymous: "匿名"
        }
    }

    static let weekdays = ["日", "月", "火", "水", "木", "金", "土"]

    /// 2026年11月4日（水）from YYYY-MM-DD; the date as given when it does not parse.
    func dayHeading(_ localDate: String) -> String {
        let parts = localDate.split(separator: "-").compactMap { Int($0) }
        guard parts.count == 3,
            let day = calendar.date(from: DateComponents(year: parts[0], month: parts[1], day: parts[2], hour: 12))
        else { return "<time>\(Self.escape(localDate))</time>" }
        let weekday = Self.weekdays[calendar.component(.weekday, from: day) - 1]
        return "<time datetime=\"\(Self.escape(localDate))\">\(parts[0])年\(parts[1])月\(parts[2])日<span class=\"weekday\">（\(weekday)）</span></time>"
    }

    func longDate(_ date: Date) -> String {
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        return "\(parts.year ?? 0)年\(parts.month ?? 0)月\(parts.day ?? 0)日"
    }

    /// 2026-11-04T01:30+09:00: the machine-readable time a <time> element carries.
    static func isoMinute(_ date: Date, _ calendar: Calendar) -> String {
        let p = calendar.dateComponents([.year, .month, .day, .hour, .minute], from: date)
        let offset = calendar.timeZone.secondsFromGMT(for: date) / 60
        let zone = offset == 0 ? "Z" : "\(offset < 0 ? "-" : "+")\(pad(abs(offset) / 60)):\(pad(abs(offset) % 60))"
        return "\(pad(p.year ?? 0, to: 4))-\(pad(p.month ?? 0))-\(pad(p.day ?? 0))T\(pad(p.hour ?? 0)):\(pad(p.minute ?? 0))\(zone)"
    }

    static func pad(_ number: Int, to width: Int = 2) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

extension ExportBook {
    /// Mincho for the diary's words, as a printed book sets them; gothic for the labels around
    /// them. Each stack names the fonts macOS/iOS, Windows and Linux/Android ship, then the generic.
    static let style = """

        :root { color-scheme: light; }
        * { box-sizing: border-box; }
        html { background: #f3efe7; color: #2b2622; font-size: 17px; line-height: 1.9; -webkit-text-size-adjust: 100%;
          font-family: "Hiragino Mincho ProN", "Hiragino Mincho Pro", "Yu Mincho", YuMincho, "Noto Serif CJK JP", "Noto Serif JP", "Source Han Serif JP", "IPAexMincho", "MS PMincho", serif; }
        body { margin: 0; }
        .kind, .members, .exported, .day-heading, .byline, .question-mark, .read, .colophon, .empty {
          font-family: "Hiragino Kaku Gothic ProN", "Hiragino Sans", "Yu Gothic", YuGothic, Meiryo, "Noto Sans CJK JP", "Noto Sans JP", "Source Han Sans JP", sans-serif; }
        .book { max-width: 44rem; margin: 2.5rem auto; padding: 3rem 3.5rem 2rem; background: #fffdf9; box-shadow: 0 1px 4px rgba(70, 50, 30, .12); }
        .cover { text-align: center; padding: 1.5rem 0 2rem; margin-bottom: 1rem; border-bottom: 1px solid #ddd3c4; }
        .kind { margin: 0; font-size: .75rem; letter-spacing: .25em; color: #8c7b66; }
        h1 { margin: .4rem 0 1rem; font-size: 2rem; font-weight: 700; line-height: 1.4; letter-spacing: .05em; }
        .avatar { width: 1.6em; height: 1.6em; border-radius: 50%; object-fit: cover; vertical-align: middle; margin-right: .4em; }
        .members { display: flex; flex-wrap: wrap; justify-content: center; gap: .2rem 1.4rem; margin: 0 0 .8rem; padding: 0; list-style: none; font-size: .9rem; }
        .role { margin-left: .4em; padding: 0 .35em; font-size: .7rem; color: #8c7b66; border: 1px solid #ddd3c4; border-radius: .3em; }
        .exported { margin: 0; font-size: .75rem; color: #8c7b66; }
        .day-heading { margin: 2.6rem 0 1.2rem; padding-bottom: .3rem; font-size: .95rem; font-weight: 700; color: #5f503f; letter-spacing: .06em; border-bottom: 1px solid #e4dccf; }
        .weekday { font-weight: 400; }
        .entry { margin: 0 0 1.6rem; padding-bottom: 1.4rem; border-bottom: 1px dashed #e4dccf; }
        .entry:last-child { border-bottom: 0; padding-bottom: 0; }
        .byline { margin: 0 0 .3rem; font-size: .85rem; }
        .author { font-weight: 700; }
        .byline time { margin-left: .8em; color: #8c7b66; font-variant-numeric: tabular-nums; }
        .question { margin: .4rem 0 .7rem; padding: .45rem .9rem; font-size: .95rem; background: #f7f1e6; border-left: 3px solid #cbb38e;
          -webkit-print-color-adjust: exact; print-color-adjust: exact; }
        .question-mark { display: block; font-size: .7rem; letter-spacing: .12em; color: #8c7b66; }
        .content { margin: 0; white-space: pre-wrap; overflow-wrap: anywhere; line-break: strict; }
        .photos { display: flex; flex-wrap: wrap; gap: .5rem; margin: .9rem 0 .3rem; }
        .photos img { display: block; max-width: 100%; max-height: 32rem; height: auto; border-radius: 3px; }
        .read { margin: .6rem 0 0; font-size: .75rem; color: #8c7b66; }
        .read-mark { margin-right: .6em; padding: 0 .4em; color: #8a6a40; border: 1px solid #cbb38e; border-radius: .3em; }
        .empty { text-align: center; color: #8c7b66; }
        .colophon { margin-top: 2.5rem; padding-top: .8rem; text-align: center; font-size: .75rem; color: #8c7b66; border-top: 1px solid #ddd3c4; }
        @media (max-width: 40rem) {
          .book { margin: 0; padding: 1.5rem 1.2rem; box-shadow: none; }
        }
        @page { size: A4; margin: 18mm 17mm 20mm; }
        @media print {
          html { background: none; font-size: 10.5pt; }
          .book { max-width: none; margin: 0; padding: 0; background: none; box-shadow: none; }
          .entry { break-inside: avoid; page-break-inside: avoid; }
          .day-heading { break-after: avoid; page-break-after: avoid; }
          .photos img { max-height: 110mm; }
          p, .content { orphans: 3; widows: 3; }
        }

        """
}
