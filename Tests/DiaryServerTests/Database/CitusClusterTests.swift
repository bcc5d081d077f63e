import Foundation
import PostgresClient
import Testing
import TestSupport
@testable import DiaryServer

/// The schema on a real Citus cluster, run by `make test-citus` (CITUS_DATABASE_URL, the
/// coordinator's database after `migrate --citus`); `make test` has no cluster and skips it.
@Suite("On a Citus cluster", .enabled(if: ProcessInfo.processInfo.environment["CITUS_DATABASE_URL"] != nil))
struct CitusClusterTests {
    static func coordinator() throws -> PostgresConfiguration {
        try PostgresConfiguration(url: ProcessInfo.processInfo.environment["CITUS_DATABASE_URL"] ?? "")
    }

    @Test("every table is laid out as planned: by diary and co-located with diaries, a reference table, or the coordinator's")
    func layout() async throws {
        try await TestDatabase.withPool(try Self.coordinator(), size: 1) { pool in
            let rows = try await pool.query("""
                select p.logicalrelid::text as name, p.partmethod::text as method, p.repmodel::text as model,
                    p.colocationid = (select colocationid from pg_dist_partition where logicalrelid = 'diaries'::regclass) as with_diaries,
                    coalesce(column_to_column_name(p.logicalrelid, p.partkey), '') as column
                from pg_dist_partition p
                """)
            var found: [String: CitusSchema.Placement] = [:]
            for row in rows {
                let name = try row.decode("name", as: String.self)
                switch (try row.decode("method", as: String.self), try row.decode("model", as: String.self)) {
                case ("h", _) where try row.decode("with_diaries", as: Bool.self):
                    found[name] = .byDiary(column: try row.decode("column", as: String.self))
                case ("n", "t"): found[name] = .reference
                case ("n", "s"): found[name] = .coordinator
                default: Issue.record("\(name) is laid out otherwise")
                }
            }
            for (table, placement) in CitusSchema.placements {
                #expect(found[table] == placement, "\(table)")
            }
        }
    }
}
