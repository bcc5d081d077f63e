import Foundation
import PostgresClient
import Testing
import TestSupport

@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

@Suite("array_agg columns")
struct AggregateDecodingTests {
    @Test("NULL (nothing aggregated) is empty; a length unlike its siblings' is an error naming the column")
    func aggregates() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                let row = try #require(try await pool.query("""
                    select (select array_agg(gen_random_uuid()) from generate_series(1, 0)) as nothing,
                           array[gen_random_uuid(), gen_random_uuid()] as two, array['a', null] as images
                    """).first)
                #expect(try row.decodeAggregate("nothing", as: UUID.self) == [])
                #expect(try row.decodeAggregate("two", as: UUID.self, count: 2).count == 2)
                #expect(try row.decodeAggregate("images", as: String?.self, count: 2) == ["a", nil])
                let mismatch = #expect(throws: PostgresDecodingError.self) { try row.decodeAggregate("two", as: UUID.self, count: 3) }
                #expect(mismatch?.column == "two")
            }
        }
    }
}
