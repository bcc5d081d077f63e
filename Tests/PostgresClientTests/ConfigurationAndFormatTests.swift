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
    func arrays() {
        #expect(PostgresArrayLiteral.parse("{}") == [])
        #expect(PostgresArrayLiteral.parse("{a,\"b c\",NULL,\"NULL\",\"q\\\"x\"}") == ["a", "b c", nil, "NULL", "q\"x"])
        #expect(PostgresArrayLiteral.parse("{{a},{b}}") == nil)
        #expect(PostgresArrayLiteral.parse("{a,b") == nil)
        #expect(PostgresArrayLiteral.format(["a\\b", "c\"d"]) == "{\"a\\\\b\",\"c\\\"d\"}")
    }
}
