import Foundation
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore

/// One rule, one place: every Swift twin says what its row-level security policy says.
///
/// PostgreSQL deparses both: the real policy as pg_policies shows it, and the twin's text
/// as a policy of the same command created beside it in a transaction that is rolled back.
/// Spelling, parentheses and table prefixes drop out; any difference in meaning shows. A
/// twin is USING alone, so a policy with a WITH CHECK differs from it here: a statement
/// that spliced in only USING would let through what the check refuses.
@Suite("Policy twins")
struct PolicyTwinTests {
    struct Deparsed: Equatable, CustomStringConvertible {
        var using: String?
        var check: String?
        var description: String { "USING \(using ?? "—") WITH CHECK \(check ?? "—")" }
    }

    @Test("each twin deparses as its policy does", arguments: PolicyTwin.all.map(\.name))
    func twinMatchesPolicy(name: String) async throws {
        let twin = try #require(PolicyTwin.all.first { $0.name == name })
        let (policy, written) = try await MigratedTemplate.withDatabase { database in
            try await TestDatabase.withPool(database.as(TestDatabase.ownerRole), size: 1) { pool in
                try await pool.withConnection { connection in
                    try await connection.query("BEGIN")
                    do {
                        try await connection.query(Self.createPolicy(from: twin))
                        let policy = try await Self.deparsed(connection, table: twin.table.sql, policy: twin.name)
                        let written = try await Self.deparsed(connection, table: twin.table.sql, policy: "twin_under_test")
                        try await connection.query("ROLLBACK")
                        return (policy, written)
                    } catch {
                        _ = try? await connection.query("ROLLBACK")
                        throw error
                    }
                }
            }
        }
        let stored = try #require(policy, "no policy \(twin.name) on \(twin.table)")
        #expect(written == stored, "\(twin.name): the twin says \(written.map(String.init(describing:)) ?? "nothing"), the schema \(stored)")
    }

    @Test("entries_select narrowed to one diary is the twin's membership test, made on that diary")
    func narrowedEntriesSelect() throws {
        let narrowed = EntriesPolicy.select(inDiary: UUID())
        let twin = EntriesPolicy.select.usingPredicate.sql
        // The twin's text with its column in place of the diary's second bind.
        let membership = twin.replacingOccurrences(of: "entries.diary_id", with: "$2")
        #expect(narrowed.sql == "entries.diary_id = $1 and \(membership)")
        #expect(narrowed.bindings.count == 2)
    }

    @Test("every twin names a policy of its own, once")
    func namesAreUnique() {
        let names = PolicyTwin.all.map(\.name)
        #expect(Set(names).count == names.count)
    }

    /// `create policy twin_under_test` with the twin's USING as the schema spells it.
    static func createPolicy(from twin: PolicyTwin) -> PostgresQuery {
        let using = switch twin.spelling {
        case .asWritten: twin.usingPredicate.sql
        case .isTrue: PolicyTwin.isTrue(twin.usingPredicate).sql
        }
        // The text is the twin's source code, never a value from outside.
        return PostgresQuery(unsafeSQL: "create policy twin_under_test on \(twin.table.sql) for \(twin.command) using (\(using))")
    }

    static func deparsed(_ connection: PostgresConnection, table: String, policy: String) async throws -> Deparsed? {
        let rows = try await connection.query("""
            select qual, with_check from pg_policies where schemaname = 'public' and tablename = \(table) and policyname = \(policy)
            """)
        return try rows.first.map { Deparsed(using: try $0.decode("qual"), check: try $0.decode("with_check")) }
    }
}
