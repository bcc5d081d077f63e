public import Foundation
public import OpenAPIRuntime

/// Reads and writes the server's timestamps: RFC 3339 in UTC with six fractional digits
/// (`2026-11-20T09:15:02.123456Z`), as the contract documents.
///
/// The runtime's default transcoder expects whole seconds and fails on every answer that holds
/// a time; `.iso8601WithFractionalSeconds` rounds to milliseconds. This one keeps microseconds,
/// so a time read and written back is the time the server wrote, and it also reads any other
/// number of fractional digits (none included) and any UTC offset.
public struct MicrosecondDateTranscoder: DateTranscoder {
    /// Creates the transcoder; it holds no state.
    public init() {}

    /// Writes `date` in UTC with exactly six fractional digits.
    public func encode(_ date: Date) throws -> String {
        let interval = date.timeIntervalSince1970
        var seconds = interval.rounded(.down)
        var micros = Int(((interval - seconds) * 1_000_000).rounded())
        if micros == 1_000_000 { seconds += 1; micros = 0 }
        let whole = Date(timeIntervalSince1970: seconds)
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: whole)
        func pad(_ value: Int?, _ width: Int) -> String {
            let text = String(value ?? 0)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.year, 4))-\(pad(parts.month, 2))-\(pad(parts.day, 2))T"
            + "\(pad(parts.hour, 2)):\(pad(parts.minute, 2)):\(pad(parts.second, 2)).\(pad(micros, 6))Z"
    }

    /// Reads an RFC 3339 date-time with any number of fractional digits.
    public func decode(_ text: String) throws -> Date {
        guard let date = Self.parse(text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "not an RFC 3339 date-time: \(text)"))
        }
        return date
    }

    /// `yyyy-MM-ddTHH:mm:ss[.fraction](Z|±hh:mm)`, parsed by hand: Foundation's ISO 8601
    /// parsers differ between platforms in how many fractional digits they take.
    static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[start..<start + count] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard bytes.count >= 20,
              let year = number(0, 4), bytes[4] == UInt8(ascii: "-"),
              let month = number(5, 2), bytes[7] == UInt8(ascii: "-"),
              let day = number(8, 2), bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t"),
              let hour = number(11, 2), bytes[13] == UInt8(ascii: ":"),
              let minute = number(14, 2), bytes[16] == UInt8(ascii: ":"),
              let second = number(17, 2) else { return nil }
        var index = 19
        var fraction = 0.0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) {
                fraction += Double(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < bytes.count else { return nil }
        var offsetSeconds = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            guard index + 1 == bytes.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == bytes.count, let hours = number(index + 1, 2), bytes[index + 3] == UInt8(ascii: ":"),
                  let minutes = number(index + 4, 2) else { return nil }
            offsetSeconds = (hours * 3600 + minutes * 60) * (bytes[index] == UInt8(ascii: "+") ? 1 : -1)
        default:
            return nil
        }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        guard let whole = calendar.date(from: components) else { return nil }
        return Date(timeIntervalSince1970: whole.timeIntervalSince1970 - Double(offsetSeconds) + fraction)
    }
}

extension JSONDecoder {
    /// A decoder for the contract's JSON outside the generated client (socket frames, the queue's store).
    static var diary: JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            return try MicrosecondDateTranscoder().decode(text)
        }
        return decoder
    }
}

extension JSONEncoder {
    /// An encoder matching `JSONDecoder.diary`.
    static var diary: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(try MicrosecondDateTranscoder().encode(date))
        }
        return encoder
    }
}
