import Foundation
import PostgresClient
import Testing
import TestSupport

@Suite("Queries, binds and decoding against a real PostgreSQL")
struct QueryAndDecodingTests {
    @Test("interpolation becomes numbered binds and logs redact the values")
    func interpolationBecomesBinds() {
        let secret = "hunter2'; drop table users; --"
        let query: PostgresQuery = "select * from users where name = \(secret) and age > \(30)"
        #expect(query.sql == "select * from users where name = $1 and age > $2")
        #expect(query.bindings.count == 2)
        #expect(!query.description.contains("hunter2"))
        #expect(query.description.contains("2 bind(s) redacted"))
    }

    @Test("a spliced query's binds are renumbered after the outer ones, and the values arrive in order")
    func splicedQueryKeepsItsValues() async throws {
        let rule: PostgresQuery = "$$x$$ <> \(7) and 'it''s $1' <> \("$2") and \(8)"
        let query: PostgresQuery = "select \(1) as a, (\(rule)) as b, \("tail") as c"
        #expect(query.sql == "select $1 as a, ($$x$$ <> $2 and 'it''s $1' <> $3 and $4) as b, $5 as c")
        #expect(query.bindings.count == 5)
        // Identifiers that hold `$n` (ASCII or not, quoted or not) are not placeholders; `$10` is one.
        let names: PostgresQuery = #"a$1 + café$1 + "x $1" + _$2 + \#(1) + $10 + ($1)"#
        #expect(PostgresQuery("select \(0), \(names)").sql == #"select $1, a$1 + café$1 + "x $1" + _$2 + $2 + $11 + ($2)"#)

        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration) { pool in
                let rule: PostgresQuery = "\(41)::int + 1 = \(42)::int"
                let row = try #require(try await pool.query("select \("first")::text as a, (\(rule)) as b, \("last")::text as c").first)
                #expect(try row.decode("a", as: String.self) == "first")
                #expect(try row.decode("b", as: Bool.self))
                #expect(try row.decode("c", as: String.self) == "last")
            }
        }
    }

    @Test("an empty JSON array decodes as any array type without the parser, and as nothing else")
    func emptyJSONArray() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration) { pool in
                let row = try #require(try await pool.query("select '[]'::jsonb as empty, '[1, 2]'::jsonb as full").first)
                #expect(try row.decode("empty", as: PostgresJSON<[Settings]>.self).value == [])
                #expect(try row.decode("full", as: PostgresJSON<[Int]>.self).value == [1, 2])
                #expect(throws: PostgresDecodingError.self) { try row.decode("empty", as: PostgresJSON<Settings>.self) }
                #expect(throws: PostgresDecodingError.self) { try row.decode("empty", as: PostgresJSON<[String: Int]>.self) }
            }
        }
    }

    @Test("quotes, unicode, NUL-free control characters and NULL round-trip unchanged")
    func bindsRoundTrip() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration) { pool in
                let values = ["it's \"quoted\" \\ back", "ずっと日記 💌", "tab\tnewline\n", "", "'; drop table x; --"]
                for value in values {
                    let row = try #require(try await pool.query("select \(value)::text as v").first)
                    #expect(try row.decode("v", as: String.self) == value)
                }
                let missing: String? = nil
                let row = try #require(try await pool.query("select \(missing)::text as v, \(missing) is null as isnull").first)
                #expect(try row.decode("v", as: String?.self) == nil)
                #expect(try row.decode("isnull", as: Bool.self))
            }
        }
    }

    @Test("a NUL character in text is refused before it is sent, not silently truncated")
    func nulIsRefused() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration) { pool in
                let error = await #expect(throws: PostgresError.self) {
                    try await pool.query("select \("a\u{0}b")::text")
                }
                #expect(error?.kind == .invalidInput)
                // The connection is still usable afterwards.
                let rowCount = try await pool.query("select 1").count
                #expect(rowCount == 1)
            }
        }
    }

    struct Settings: Codable, Equatable, Sendable {
        var reminderTime: String
        var notify: Bool
    }

    @Test("every supported type decodes, and NULL decodes as Optional")
    func everyTypeDecodes() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration) { pool in
                let id = UUID()
                let ids = [UUID(), UUID()]
                let when = Date(timeIntervalSince1970: 1_790_000_000.123456)
                let settings = PostgresJSON(Settings(reminderTime: "21:00", notify: true))
                let rows = try await pool.query("""
                    select \(id) as id, \(Int.max) as big, \(Int32(-7)) as small, \(Int64.min) as min64,
                           \(true) as yes, \(1.5) as ratio, \(when) as at, \(settings) as settings,
                           \(["a", "b,c", "d\"e", "NULL", "", "ひ"]) as tags, \(ids) as ids, \([when, when + 86_400]) as times,
                           null::uuid as nothing, '{}'::text[] as empty, array['a', null, 'NULL'] as gaps, 'infinity'::timestamptz as forever,
                           \(Data([0, 1, 0xAB, 0xFF])) as bytes, ''::bytea as no_bytes
                    """)
                let row = try #require(rows.first)
                #expect(try row.decode("id", as: UUID.self) == id)
                #expect(try row.decode("big", as: Int.self) == Int.max)
                #expect(try row.decode("small", as: Int32.self) == -7)
                #expect(try row.decode("min64", as: Int64.self) == Int64.min)
                #expect(try row.decode("yes", as: Bool.self))
                #expect(try row.decode("ratio", as: Double.self) == 1.5)
                let decodedDate = try row.decode("at", as: Date.self)
                #expect(abs(decodedDate.timeIntervalSince(when)) < 0.000_001)
                #expect(try row.decode("settings", as: PostgresJSON<Settings>.self).value == settings.value)
                #expect(try row.decode("tags", as: [String].self) == ["a", "b,c", "d\"e", "NULL", "", "ひ"])
                #expect(try row.decode("ids", as: [UUID].self) == ids)
                let times = try row.decode("times", as: [Date].self)
                #expect(times.count == 2 && abs(times[0].timeIntervalSince(when)) < 0.000_001 && abs(times[1].timeIntervalSince(when + 86_400)) < 0.000_001)
                #expect(try row.decode("nothing", as: UUID?.self) == nil)
                #expect(try row.decode("bytes", as: Data.self) == Data([0, 1, 0xAB, 0xFF]))
                #expect(try row.decode("no_bytes", as: Data.self) == Data())
                #expect(throws: PostgresDecodingError.self) { try row.decode("small", as: Data.self) }
                #expect(try row.decode("empty", as: [String].self) == [])
                #expect(try row.decode("gaps", as: [String?].self) == ["a", nil, "NULL"])
                #expect(throws: PostgresDecodingError.self) { try row.decode("gaps", as: [String].self) }
                let (first, second) = try row.decode((UUID, Int).self)
                #expect(first == id && second == Int.max)
                let forever = #expect(throws: PostgresDecodingError.self) { try row.decode("forever", as: Date.self) }
                #expect(forever?.column == "forever")
            }
        }
    }

    @Test("a decode mismatch is an error naming the column, never a crash")
    func decodeMismatchNamesColumn() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration) { pool in
                let row = try #require(try await pool.query("select 'x' as label, null::int as missing").first)
                let wrongType = #expect(throws: PostgresDecodingError.self) { try row.decode("label", as: Int.self) }
                #expect(wrongType?.column == "label")
                #expect(wrongType?.description.contains("label") == true)
                let null = #expect(throws: PostgresDecodingError.self) { try row.decode("missing", as: Int.self) }
                #expect(null?.failure == .unexpectedNull)
                let noColumn = #expect(throws: PostgresDecodingError.self) { try row.decode("nope", as: Int.self) }
                #expect(noColumn?.column == "nope")
                #expect(throws: PostgresDecodingError.self) { try row.decode((String, Int?, Int).self) }
            }
        }
    }

    @Test("SQLSTATE, constraint and detail are surfaced; the description holds no SQL or values")
    func sqlStateSurfaced() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration) { pool in
                try await pool.query("create table people (email text constraint people_email_key unique)")
                try await pool.query("insert into people values (\("secret@example.com"))")
                let error = await #expect(throws: PostgresError.self) {
                    try await pool.query("insert into people values (\("secret@example.com"))")
                }
                #expect(error?.kind == .uniqueViolation)
                #expect(error?.sqlState == SQLState("23505"))
                #expect(error?.constraint == "people_email_key")
                #expect(error?.detail?.contains("already exists") == true)
                #expect(error.map { "\($0)" }?.contains("secret") == false)
                #expect(error.map { "\($0)" }?.contains("insert") == false)

                let syntax = await #expect(throws: PostgresError.self) { try await pool.query("selec 1") }
                #expect(syntax?.sqlState?.errorClass == "42")
                let rowCount = try await pool.query("select 1").count
                #expect(rowCount == 1)
            }
        }
    }

    @Test("prepared statements are reused per connection and survive errors in between")
    func preparedStatementsReused() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                for value in 0..<50 {
                    let row = try #require(try await pool.query("select \(value)::int8 + 1 as n").first)
                    #expect(try row.decode("n", as: Int.self) == value + 1)
                }
                let prepared = try #require(try await pool.query("select count(*)::int8 as n from pg_prepared_statements where statement like 'select $1::int8 + 1%'").first)
                #expect(try prepared.decode("n", as: Int.self) == 1)
            }
        }
    }

    @Test("past the per-connection cache of prepared statements, statements go unprepared with their binds' types")
    func unpreparedPastTheCache() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                for variant in 0..<260 {
                    var bindings = PostgresBindings()
                    bindings.append(Int64(variant))
                    // Untyped in the text, so the type PostgreSQL sees is the bind's own.
                    let statement = PostgresQuery(unsafeSQL: "select pg_typeof($1)::text as type, $1 as value, \(variant) as variant", bindings: bindings)
                    let row = try #require(try await pool.query(statement).first)
                    #expect(try row.decode("type", as: String.self) == "bigint", "\(variant)")
                    #expect(try row.decode("value", as: Int.self) == variant)
                }
                let prepared = try #require(try await pool.query("select count(*)::int8 as n from pg_prepared_statements").first)
                #expect(try prepared.decode("n", as: Int.self) == 256)
            }
        }
    }
}
