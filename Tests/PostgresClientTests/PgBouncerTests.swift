import Foundation
import PostgresClient
import Testing
import TestSupport

/// The client behind PgBouncer in transaction mode with one server connection per
/// database and user (scripts/pgbouncer.sh, started by `make test`): every client
/// connection's transactions take turns on the same server connection.
@Suite("Behind PgBouncer in transaction mode")
struct PgBouncerTests {
    @Test("it connects: nothing is sent as a startup option, which PgBouncer refuses")
    func connects() async throws {
        try await TestDatabase.with { database in
            try await TestDatabase.withPool(try TestDatabase.viaPgBouncer(database), size: 1) { pool in
                let row = try #require(try await pool.query("select current_database() as name").first)
                #expect(try row.decode("name", as: String.self) == database.database)
            }
        }
    }

    @Test("named statements collide on the shared server connection; unnamed ones do not")
    func namedStatementsCollide() async throws {
        try await TestDatabase.with { database in
            var named = try TestDatabase.viaPgBouncer(database)
            named.preparedStatements = true
            // Two client connections, each preparing its first statement as s0 on the one server connection.
            let error = await #expect(throws: PostgresError.self) {
                try await TestDatabase.withPool(named, size: 2) { pool in
                    try await pool.withConnection { first in
                        try await first.query("select 1 as one")
                        try await pool.withConnection { second in try await second.query("select 2 as two") }
                    }
                }
            }
            #expect(error?.sqlState == SQLState("42P05"), "\(String(describing: error))")

            try await TestDatabase.withPool(try TestDatabase.viaPgBouncer(database), size: 2) { pool in
                try await pool.withConnection { first in
                    for round in 0..<5 {
                        try await first.query("select \(round)::int8 as n")
                        try await pool.withConnection { second in try await second.query("select \(round)::int8 + 1 as n") }
                    }
                }
            }
        }
    }

    @Test("the statement timeout holds in every transaction and stays in it")
    func statementTimeoutPerTransaction() async throws {
        try await TestDatabase.with { database in
            var timed = try TestDatabase.viaPgBouncer(database)
            timed.statementTimeout = .milliseconds(200)
            try await TestDatabase.withPool(timed, size: 1) { pool in
                let error = await #expect(throws: PostgresError.self) { try await pool.query("select pg_sleep(2)") }
                #expect(error?.sqlState == .queryCanceled)
                let inTransaction = try await pool.transaction(["show statement_timeout"])
                #expect(try inTransaction[0].first?.decode("statement_timeout", as: String.self) == "200ms")
            }
            // A client without a timeout, on the same server connection, does not inherit it.
            try await TestDatabase.withPool(try TestDatabase.viaPgBouncer(database), size: 1) { pool in
                let row = try #require(try await pool.query("show statement_timeout").first)
                #expect(try row.decode("statement_timeout", as: String.self) == "0")
            }
        }
    }
}

@Suite("Session settings without startup options")
struct SessionSettingTests {
    @Test("a database whose DateStyle is not ISO is refused at connect, with the fix in the message")
    func dateStyleChecked() async throws {
        try await TestDatabase.with { database in
            try await TestDatabase.withAdminPool { admin in
                try await admin.query(PostgresQuery(unsafeSQL: "alter database \(database.database!) set datestyle = 'SQL, DMY'"))
            }
            let error = await #expect(throws: PostgresError.self) {
                try await TestDatabase.withPool(database, size: 1) { try await $0.query("select 1") }
            }
            #expect(error?.kind == .invalidConfiguration)
            #expect(error?.message.contains("set datestyle = 'ISO, YMD'") == true, "\(String(describing: error))")
        }
    }
}
