import Foundation
@testable import PostgresClient
import Testing

@Suite("URL parsing and text formats")
struct ConfigurationAndFormatTests {
    @Test("a password with reserved characters survives percent-encoding")
    func oddPassword() throws {
        let configuration = try PostgresConfiguration(url: "postgres://diary:p%40ss%2Fw%3Ard%20'%22@db.example:6543/diary?sslmode=require")
        #expect(configuration.password == "p@ss/w:rd '\"")
        #expect(configuration.host == "db.example")
        #expect(configuration.port == 6543)
        #expect(configuration.database == "diary")
        #expect(configuration.parameters["sslmode"] == "require")
        #expect(!configuration.description.contains("p@ss"))
    }

    @Test("a bad URL gets an error that names the problem and never echoes the password")
    func badURLs() {
        for (url, reason) in [
            ("mysql://u:topsecret@h/db", "scheme"),
            ("postgres://u:topsecret@h/db?bogus=1", "bogus"),
            ("postgres://u:topsecret@h/a/b", "single database name"),
            ("postgres://u:topsecret@h:99999/db", "URL"),
        ] {
            let error = #expect(throws: PostgresError.self) { try PostgresConfiguration(url: url) }
            #expect(error?.kind == .invalidConfiguration)
            #expect(error?.message.contains("topsecret") == false)
            #expect(error?.message.contains(reason) == true)
        }
    }

    @Test("timestamps round-trip at microsecond precision, in any offset")
    func timestamps() throws {
        let date = Date(timeIntervalSince1970: 1_790_000_000.654321)
        let text = PostgresTimestamp.format(date)
        #expect(text == "2026-09-21T14:13:20.654321Z")
        let parsed = try #require(PostgresTimestamp.parse("2026-09-21 14:13:20.654321+00"))
        #expect(abs(parsed.timeIntervalSince(date)) < 0.000_001)
        #expect(PostgresTimestamp.parse("2026-09-21 23:13:20.654321+09") == parsed)
        #expect(PostgresTimestamp.parse("2026-09-21 13:43:20.654321-00:30") == parsed)
        #expect(PostgresTimestamp.parse("infinity") == nil)
        #expect(PostgresTimestamp.parse("2026-09-21 14:53:20") == nil)
    }

    @Test("array literals parse quoting, escapes and NULL, and refuse nesting")
    func arrays() throws {
        let notAnArray = PostgresDecodingFailure.malformed("not a one-dimensional array")
        #expect(try [String?](postgresText: "{}") == [])
        #expect(try [String?](postgresText: "{a,\"b c\",NULL,\"NULL\",\"q\\\"x\"}") == ["a", "b c", nil, "NULL", "q\"x"])
        #expect(throws: notAnArray) { try [String?](postgresText: "{{a},{b}}") }
        #expect(throws: notAnArray) { try [String?](postgresText: "{a,b") }
        #expect(try [String?](postgresText: "{\"\",\"a\\\\b\",\"}\"}") == ["", "a\\b", "}"])
        for malformed in ["", "{", "}", "{a,}", "{,a}", "{a,,b}", "{a}b}", "{\"a\"b}", "{\"a}", "{\"a\\\"}", "{a\"b}", "x{a}"] {
            #expect(throws: notAnArray, "\(malformed)") { try [String?](postgresText: malformed) }
        }
        #expect(PostgresArrayLiteral.format(["a\\b", "c\"d"]) == "{\"a\\\\b\",\"c\\\"d\"}")
    }

    @Test("uuid text reads back exactly, is written as uuidString in lower case, and anything but the 8-4-4-4-12 form is refused")
    func uuidText() throws {
        for _ in 0..<1_000 {
            let uuid = UUID()
            #expect(uuid.canonicalText == uuid.uuidString.lowercased())
            #expect(uuid.postgresText == uuid.canonicalText)
            var upper = [UInt8](repeating: 0, count: UUID.textLength)
            upper.withUnsafeMutableBufferPointer { _ = uuid.writeText(into: $0, upperCase: true) }
            #expect(String(decoding: upper, as: UTF8.self) == uuid.uuidString)
            #expect(try UUID(postgresText: uuid.uuidString.lowercased()) == uuid)
            #expect(try UUID(postgresText: uuid.uuidString) == uuid)
        }
        for bad in ["", "not a uuid", "0123456789abcdef0123456789abcdef", "0123456-89ab-cdef-0123-456789abcdef0", "g1234567-89ab-cdef-0123-456789abcdef", "01234567-89ab-cdef-0123-456789abcdeff",
                    "01234567-89ab-cdef-0123-456789abcdeg", "01234567-89ab-cdef-0123-456789abcde:", "01234567-89ab-cdef-0123-456789abcde/",
                    "01234567-89ab-cdef-0123-456789abcde@", "01234567-89ab-cdef-0123-456789abcde`", "0123456789ab-cdef-0123-4567-89abcdef"] {
            #expect(throws: PostgresDecodingFailure.self) { try UUID(postgresText: bad) }
        }
    }

    @Test("timestamps format as RFC 3339 with microseconds and parse back to the same instant")
    func timestampRoundTrip() throws {
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000000Z")
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: 1_790_000_000.000_042)) == "2026-09-21T14:13:20.000042Z")
        for _ in 0..<1_000 {
            let micros = Int64.random(in: 0...4_102_444_800_000_000)
            let date = Date(timeIntervalSince1970: Double(micros) / 1_000_000)
            let text = PostgresTimestamp.format(date)
            #expect(text.count == 27)
            #expect(PostgresTimestamp.parse(text).map { abs($0.timeIntervalSince(date)) < 0.000_001 } == true, "\(text)")
        }
    }

    @Test("the calendar arithmetic agrees with Foundation's Gregorian calendar, leap days and dates before 1970 included")
    func calendarArithmetic() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        // Foundation's calendar turns Julian before October 1582, so the comparison starts after it.
        let earliest = Date(timeIntervalSince1970: -11_676_096_000)  // 1600-01-01
        let latest = Date(timeIntervalSince1970: 253_402_300_799)  // 9999-12-31 23:59:59
        let fixed = ["1600-02-29T00:00:00", "1900-02-28T23:59:59", "1900-03-01T00:00:00", "1969-12-31T23:59:59", "2000-02-29T12:00:00", "2024-12-31T23:59:59"]
        let instants = fixed.map { text -> Date in
            var parts = text.split(whereSeparator: { "-T:".contains($0) }).map { Int($0)! }[...]
            return calendar.date(from: DateComponents(year: parts.popFirst(), month: parts.popFirst(), day: parts.popFirst(),
                                                      hour: parts.popFirst(), minute: parts.popFirst(), second: parts.popFirst()))!
        } + (0..<5_000).map { _ in Date(timeIntervalSince1970: Double(Int64.random(in: Int64(earliest.timeIntervalSince1970)...Int64(latest.timeIntervalSince1970)))) }
        for date in instants {
            let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
            let expected = String(format: "%04d-%02d-%02dT%02d:%02d:%02d.000000Z", parts.year!, parts.month!, parts.day!, parts.hour!, parts.minute!, parts.second!)
            #expect(PostgresTimestamp.format(date) == expected)
            #expect(PostgresTimestamp.parse(expected) == date, "\(expected)")
        }
        // Out-of-range fields are refused, not rolled over into the next month or day.
        for bad in ["2026-13-01 00:00:00+00", "2026-00-10 00:00:00+00", "2026-01-32 00:00:00+00", "2026-01-01 24:00:00+00", "2026-01-01 23:60:00+00"] {
            #expect(PostgresTimestamp.parse(bad) == nil, "\(bad)")
        }
    }
}
