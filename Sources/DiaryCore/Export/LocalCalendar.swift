package import Foundation

/// The requester's days, as an export names them: `entries.json`'s localDate, the book's
/// headings and times, and the archive's file name all read dates through one of these.
package struct LocalCalendar: Sendable {
    /// Where a zone PostgreSQL knows but Foundation does not is read, and for a missing row.
    package static let fallbackZone = "Asia/Tokyo"

    /// The zone's name as the user set it.
    package let zoneName: String
    package let calendar: Calendar

    package init(zoneName: String) {
        self.zoneName = zoneName
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zoneName) ?? TimeZone(identifier: Self.fallbackZone) ?? .gmt
        self.calendar = calendar
    }

    /// `YYYY-MM-DD` (or `YYYYMMDD` with an empty separator) of `date` in this zone.
    package func day(of date: Date, separator: String = "-") -> String {
        let day = calendar.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d\(separator)%02d\(separator)%02d", day.year ?? 0, day.month ?? 0, day.day ?? 0)
    }
}
