public import Foundation

/// Converts `timestamptz` text to and from `Date`.
///
/// Every connection checks that the server's DateStyle is ISO, so the server always
/// answers `YYYY-MM-DD HH:MM:SS[.ffffff]+HH[:MM]` in its time zone, offset included; a
/// fixed-position parser is then both exact to the microsecond and far cheaper than a
/// general date formatter.
public enum PostgresTimestamp {
    /// RFC 3339 in UTC with microseconds, e.g. `2026-11-22T13:30:53.123456Z`.
    public static func format(_ date: Date) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(formattedLength)
        write(date, into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The length of what `format` and `write` produce.
    public static let formattedLength = 27

    /// Appends `format(date)`'s bytes, for a writer that has a buffer already (a JSON response).
    ///
    /// Digits are written by hand: `String(format:)` went through vfprintf, CFString and
    /// a dynamic cast per argument, and `gmtime_r` takes glibc's time zone lock each call.
    public static func write(_ date: Date, into bytes: inout [UInt8]) {
        let totalMicros = Int64((date.timeIntervalSince1970 * 1_000_000).rounded())
        let (days, microsOfDay) = floorDivision(totalMicros, 86_400_000_000)
        let (year, month, day) = civil(fromDaysSinceEpoch: Int(days))
        let secondsOfDay = Int(microsOfDay / 1_000_000)
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: formattedLength))
        bytes.withUnsafeMutableBufferPointer { buffer in
            func put(_ value: Int, at offset: Int, digits: Int) {
                var remaining = value
                for index in stride(from: start + offset + digits - 1, through: start + offset, by: -1) {
                    buffer[index] = UInt8(ascii: "0") + UInt8(remaining % 10)
                    remaining /= 10
                }
            }
            put(year, at: 0, digits: 4)
            buffer[start + 4] = UInt8(ascii: "-")
            put(month, at: 5, digits: 2)
            buffer[start + 7] = UInt8(ascii: "-")
            put(day, at: 8, digits: 2)
            buffer[start + 10] = UInt8(ascii: "T")
            put(secondsOfDay / 3600, at: 11, digits: 2)
            buffer[start + 13] = UInt8(ascii: ":")
            put(secondsOfDay / 60 % 60, at: 14, digits: 2)
            buffer[start + 16] = UInt8(ascii: ":")
            put(secondsOfDay % 60, at: 17, digits: 2)
            buffer[start + 19] = UInt8(ascii: ".")
            put(Int(microsOfDay % 1_000_000), at: 20, digits: 6)
            buffer[start + 26] = UInt8(ascii: "Z")
        }
    }

    private static func floorDivision(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let remainder = value % divisor
        return remainder < 0 ? (value / divisor - 1, remainder + divisor) : (value / divisor, remainder)
    }

    /// Days since 1970-01-01 in the proleptic Gregorian calendar (H. Hinnant's
    /// `days_from_civil`): plain arithmetic, where `timegm` takes glibc's time zone lock.
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse of `daysSinceEpoch` (`civil_from_days`).
    static func civil(fromDaysSinceEpoch days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Reads dates in JSON as RFC 3339 text, as `format` writes them.
    public static let jsonDecodingStrategy = JSONDecoder.DateDecodingStrategy.custom { decoder in
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let date = parse(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an RFC 3339 timestamp")
        }
        return date
    }

    /// Reads PostgreSQL's ISO output and RFC 3339 (a `T` or a space, `Z` or an offset).
    public static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8(parse(bytes:))
    }

    /// As `parse(_:)`, straight from a buffer such as libpq's.
    public static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        // "2026-11-22 13:30:53+00" is the shortest well-formed value.
        guard bytes.count >= 22, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
              bytes[10] == UInt8(ascii: " ") || bytes[10] == UInt8(ascii: "T"),
              bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
              let year = number(bytes, 0, 4), let month = number(bytes, 5, 2), let day = number(bytes, 8, 2),
              let hour = number(bytes, 11, 2), let minute = number(bytes, 14, 2), let second = number(bytes, 17, 2)
        else { return nil }

        var index = 19
        var micros = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < bytes.count, let digit = digitValue(bytes[index]) {
                if digits < 6 { micros = micros * 10 + digit; digits += 1 }
                index += 1
            }
            while digits < 6 { micros *= 10; digits += 1 }
        }
        guard let offsetSeconds = zoneOffset(bytes, from: index) else { return nil }

        guard (1...12).contains(month), (1...31).contains(day), hour <= 23, minute <= 59, second <= 60 else { return nil }
        let epoch = daysSinceEpoch(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSince1970: Double(epoch - offsetSeconds) + Double(micros) / 1_000_000)
    }

    /// Reads `Z`, `+HH`, `+HH:MM` or `+HH:MM:SS` and returns the offset east of UTC in seconds.
    private static func zoneOffset(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard start < bytes.count else { return nil }
        if bytes[start] == UInt8(ascii: "Z") { return start + 1 == bytes.count ? 0 : nil }
        let sign: Int
        switch bytes[start] {
        case UInt8(ascii: "+"): sign = 1
        case UInt8(ascii: "-"): sign = -1
        default: return nil
        }
        // Hours, then optionally minutes and seconds, each two digits after a colon.
        var seconds = 0
        var fields = 0
        var index = start + 1
        while index < bytes.count {
            guard fields < 3, let field = number(bytes, index, 2) else { return nil }
            seconds += field * (fields == 0 ? 3600 : fields == 1 ? 60 : 1)
            fields += 1
            index += 2
            if index < bytes.count {
                guard bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
            }
        }
        guard fields >= 1 else { return nil }
        return sign * seconds
    }

    private static func number(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ length: Int) -> Int? {
        guard start + length <= bytes.count else { return nil }
        var value = 0
        for index in start..<(start + length) {
            guard let digit = digitValue(bytes[index]) else { return nil }
            value = value * 10 + digit
        }
        return value
    }

    private static func digitValue(_ byte: UInt8) -> Int? {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) ? Int(byte - UInt8(ascii: "0")) : nil
    }
}
