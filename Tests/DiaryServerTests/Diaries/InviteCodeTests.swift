import PostgresClient
import Testing
import TestSupport

@Suite("Invite codes")
struct InviteCodeTests {
    static let crockford = Set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")

    @Test("100,000 codes: no duplicates, ten Crockford base32 characters each (50 bits)")
    func noDuplicates() async throws {
        try await MigratedTemplate.withDatabase { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                let row = try #require(try await pool.query("""
                    select count(*)::int8 as total, count(distinct code)::int8 as distinct_codes,
                           bool_and(code ~ '^[0-9A-HJKMNP-TV-Z]{10}$') as well_formed
                    from (select generate_invite_code() as code from generate_series(1, 100000)) codes
                    """).first)
                #expect(try row.decode("total", as: Int.self) == 100_000)
                #expect(try row.decode("distinct_codes", as: Int.self) == 100_000)
                #expect(try row.decode("well_formed", as: Bool.self))
            }
        }
    }

    @Test("every position takes all 32 symbols, so each carries a full 5 bits")
    func everyPositionUsesTheWholeAlphabet() async throws {
        try await MigratedTemplate.withDatabase { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                let codes = try await pool.query("select generate_invite_code() as code from generate_series(1, 4000)")
                    .map { try $0.decode("code", as: String.self) }
                for position in 0..<10 {
                    let symbols = Set(codes.map { Array($0)[position] })
                    #expect(symbols == Self.crockford, "position \(position) uses only \(symbols.count) symbols")
                }
            }
        }
    }
}
