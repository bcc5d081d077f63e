import Foundation
import Testing

@testable import DiaryServer

/// `migrate --citus` sends a migration statement by statement; the split must be psql's.
@Suite("A migration's statements")
struct MigrationStatementsTests {
    @Test("split at each top-level semicolon, never inside a string, a quoted name, a comment or a dollar-quoted body")
    func split() {
        let file = MigrationFile(version: 1, name: "x", fileName: "0001_x.sql", sql: """
            -- a comment; with a semicolon
            create table "a;b" (note text default 'it''s; here');
            /* a block; comment */
            create function f() returns void language plpgsql as $$
            begin
                perform 1; -- inside
                raise notice 'x;y';
            end
            $$;
            do $body$ begin perform 'a$$b;'; end $body$;
            select 1
            """, checksum: "")
        #expect(file.statements == [
            "-- a comment; with a semicolon\ncreate table \"a;b\" (note text default 'it''s; here');",
            "/* a block; comment */\ncreate function f() returns void language plpgsql as $$\nbegin\n    perform 1; -- inside\n    raise notice 'x;y';\nend\n$$;",
            "do $body$ begin perform 'a$$b;'; end $body$;",
            "select 1",
        ])
    }

    @Test("every migration splits into whole statements: each ends a command and keeps its function bodies whole")
    func everyMigration() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("sql/migrations")
        for file in try MigrationFile.load(from: directory) {
            let statements = file.statements
            #expect(statements.count > 0, "\(file.fileName)")
            #expect(statements.allSatisfy { $0.hasSuffix(";") }, "\(file.fileName)")
            // A body cut in two would leave an odd number of its quotes in each half.
            #expect(statements.allSatisfy { $0.components(separatedBy: "$$").count % 2 == 1 }, "\(file.fileName)")
        }
    }
}
