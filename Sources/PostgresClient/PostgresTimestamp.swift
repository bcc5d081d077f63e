import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Converts `timestamptz` text to and from `Date`.
///
/// Every connection sets `DateStyle=ISO` and `TimeZone=UTC`, so the server always
/// answers `YYYY-MM-DD HH:MM:SS[.ffffff]+00`; a fixed-position parser is then both
/// exact to the microsecond and far cheaper than a general date formatter.
public enum PostgresTimestamp {
    /// RFC 3339 in UTC with microseconds, e.g. `2026-11-22T13:30:53.123456Z`.
    ///
    /// Digits are written by hand: `String(format:)` went through vfprintf, CFString and
    /// a dynamic cast per argument, a measurable share of a timeline's CPU time.
    public static func format(_ date: Date) -> String {
        let totalMicros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        var seconds = time_t((totalMicros / 1_000_000).rounded(.down))
        let micros = Int(totalMicros - Double(seconds) * 1_000_000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var bytes = [UInt8](repeating: 0, count: 27)
        func put(_ value: Int, at start: Int, digits: Int) {
            var remaining = value
            for index in stride(from: start + digits - 1, through: start, by: -1) {
                bytes[index] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            }
        }
        put(Int(parts.tm_year) + 1900, at: 0, digits: 4)
        bytes[4] = UInt8(ascii: "-")
        put(Int(parts.tm_mon) + 1, at: 5, digits: 2)
        bytes[7] = UInt8(ascii: "-")
        put(Int(parts.tm_mday), at: 8, digits: 2)
        bytes[10] = UInt8(ascii: "T")
        put(Int(parts.tm_hour), at: 11, digits: 2)
        bytes[13] = UInt8(ascii: ":")
        put(Int(parts.tm_min), at: 14, digits: 2)
        bytes[16] = UInt8(ascii: ":")
        put(Int(parts.tm_sec), at: 17, digits: 2)
        bytes[19] = UInt8(ascii: ".")
        put(micros, at: 20, digits: 6)
        bytes[26] = UInt8(ascii: "Z")
        return String(decoding: bytes, as: UTF8.self)
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

        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let epoch = timegm(&parts)
        return Date(timeIntervalSince1970: Double(epoch - time_t(offsetSeconds)) + Double(micros) / 1_000_000)
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
