import Foundation
import PostgresClient
import Testing
import TestSupport
@testable import DiaryServer

/// sql/definitions holds every function, view, trigger and policy once; the versioned
/// migrations after 0027 hold none; and no definition changes a signature that the release
/// still serving calls (sql/definitions/released-signatures.txt).
@Suite("sql/definitions")
struct DefinitionFileTests {
    /// The last migration that defined functions, views, triggers and policies; after it, only
    /// sql/definitions does.
    static let lastDefiningMigration = 27

    enum Kind: String, CaseIterable {
        case function, view, trigger, policy
    }

    /// `kind name` (a trigger or policy as `name on table`) → how many times each definition
    /// file creates it. A function's overloads count once each.
    static func definedInFiles() throws -> [String: [String: Int]] {
        var defined: [String: [String: Int]] = [:]
        for file in try MigratedTemplate.definitions() {
            for statement in file.statements {
                guard let key = definitionKey(statement) else { continue }
                defined[key, default: [:]][file.fileName, default: 0] += 1
            }
        }
        return defined
    }

    /// The object a CREATE statement defines, as `kind name`, or nil for any other statement.
    static func definitionKey(_ statement: String) -> String? {
        let text = MigrationFile.command(of: statement).replacingOccurrences(of: "\n", with: " ")
        let patterns: [(Kind, Regex<(Substring, Substring)>)] = [
            (.function, /(?i)^create\s+(?:or\s+replace\s+)?function\s+(?:public\.)?"?([a-z0-9_]+)/),
            (.view, /(?i)^create\s+(?:or\s+replace\s+)?view\s+(?:public\.)?"?([a-z0-9_]+)/),
        ]
        for (kind, pattern) in patterns {
            if let match = text.firstMatch(of: pattern) { return "\(kind) \(match.1)" }
        }
        let onTable: [(Kind, Regex<(Substring, Substring, Substring)>)] = [
            (.trigger, /(?i)^create\s+(?:or\s+replace\s+)?(?:constraint\s+)?trigger\s+([a-z0-9_]+)\s.*?\son\s+(?:public\.)?([a-z0-9_]+)/),
            (.policy, /(?i)^create\s+policy\s+([a-z0-9_]+)\s+on\s+(?:public\.)?([a-z0-9_]+)/),
        ]
        for (kind, pattern) in onTable {
            if let match = text.firstMatch(of: pattern) { return "\(kind) \(match.1) on \(match.2)" }
        }
        return nil
    }

    /// Every function (each overload once), view, trigger and policy of the schema's own, as
    /// `definitionKey` names them.
    static func definedInCatalog(_ pool: PostgresPool) async throws -> [String] {
        let rows = try await pool.query("""
            select 'function ' || p.proname as key from pg_proc p
            where p.pronamespace = 'public'::regnamespace
              and not exists (select from pg_depend d where d.objid = p.oid and d.deptype = 'e')
            union all
            select 'view ' || viewname from pg_views where schemaname = 'public'
            union all
            select 'trigger ' || t.tgname || ' on ' || c.relname from pg_trigger t join pg_class c on c.oid = t.tgrelid
            where c.relnamespace = 'public'::regnamespace and not t.tgisinternal
            union all
            select 'policy ' || policyname || ' on ' || tablename from pg_policies where schemaname = 'public'
            """)
        return try rows.map { try $0.decode("key", as: String.self) }
    }

    /// The overloads only the release still serving calls (sql/definitions/README.md).
    static let releasedOverloads = "99_released_overloads.sql"

    @Test("every function, view, trigger and policy is created in exactly one definition file (an overload the serving release alone calls aside), as often as the schema has it")
    func definedOnce() async throws {
        let files = try Self.definedInFiles()
        let catalog = try await MigratedTemplate.withDatabase { database in
            try await TestDatabase.withPool(database, size: 1) { try await Self.definedInCatalog($0) }
        }
        let counted = Dictionary(catalog.map { ($0, 1) }, uniquingKeysWith: +)
        #expect(counted.count > 150, "the catalog query finds the schema's definitions (\(counted.count))")
        for (key, count) in counted {
            let places = files[key] ?? [:]
            // Besides its own file, a function may keep overloads for the serving release.
            let own = places.filter { $0.key != Self.releasedOverloads }
            #expect(own.count == 1, "\(key) is created in \(own.isEmpty ? "no definition file" : own.keys.sorted().joined(separator: ", "))")
            #expect(places.values.reduce(0, +) == count, "\(key): \(count) in the schema, \(places.values.reduce(0, +)) in sql/definitions")
        }
        for key in files.keys where counted[key] == nil {
            Issue.record("\(key) is in sql/definitions but not in the migrated schema")
        }
    }

    @Test("no migration after 0027 creates a function, view, trigger or policy: those live in sql/definitions")
    func migrationsDefineNothing() throws {
        let files = try MigrationFile.load(from: MigratedTemplate.migrationsDirectory)
        #expect(files.contains { $0.version == Self.lastDefiningMigration })
        for file in files where file.version > Self.lastDefiningMigration {
            for statement in file.statements {
                if let key = Self.definitionKey(statement) {
                    Issue.record("\(file.fileName) creates \(key): write it in its file under sql/definitions")
                }
            }
        }
        // The check itself: it finds what a migration would define.
        #expect(Self.definitionKey("create or replace function public.join_diary(p text) returns uuid as $$ $$") == "function join_diary")
        #expect(Self.definitionKey("CREATE POLICY x_select ON public.x FOR SELECT USING (true)") == "policy x_select on x")
        #expect(Self.definitionKey("create trigger t before insert on entries for each row execute function f()") == "trigger t on entries")
        #expect(Self.definitionKey("alter table entries add column x int") == nil)
    }

    // MARK: - Signatures the release still serving calls

    static let releasedSignaturesFile = MigratedTemplate.definitionsDirectory.appendingPathComponent("released-signatures.txt")

    /// `name(identity arguments) returns result`, one a function, as `scripts/schema.sh signatures` prints them.
    static func signatures(_ pool: PostgresPool) async throws -> Set<String> {
        let rows = try await pool.query("""
            select p.proname || '(' || pg_get_function_identity_arguments(p.oid) || ') returns ' || pg_get_function_result(p.oid) as signature
            from pg_proc p
            where p.pronamespace = 'public'::regnamespace
              and not exists (select from pg_depend d where d.objid = p.oid and d.deptype = 'e')
            """)
        return Set(try rows.map { try $0.decode("signature", as: String.self) })
    }

    static func releasedSignatures() throws -> [String] {
        try String(contentsOf: releasedSignaturesFile, encoding: .utf8)
            .split(separator: "\n").map(String.init).filter { !$0.isEmpty && !$0.hasPrefix("#") }
    }

    /// The released signatures that `current` no longer has, each with what became of its name.
    static func broken(released: [String], current: Set<String>) -> [String] {
        released.filter { !current.contains($0) }.map { signature in
            let name = String(signature.prefix { $0 != "(" })
            let now = current.filter { $0.hasPrefix(name + "(") }.sorted()
            return "\(signature): now \(now.isEmpty ? "gone" : now.joined(separator: "; "))"
        }
    }

    /// The function a statement creates, or gives a comment or privileges to, by name.
    static func functionNamed(by statement: String) -> (name: String, creates: Bool)? {
        let text = MigrationFile.command(of: statement).replacingOccurrences(of: "\n", with: " ")
        if let match = text.firstMatch(of: /(?i)^create\s+(?:or\s+replace\s+)?function\s+public\.([a-z0-9_]+)\(/) { return (String(match.1), true) }
        if let match = text.firstMatch(of: /(?i)^(?:comment\s+on|grant\s.*?\son|revoke\s.*?\son)\s+function\s+public\.([a-z0-9_]+)\(/) { return (String(match.1), false) }
        return nil
    }

    @Test("each function is followed by its comment and grants, which come nowhere else: a function reads as its source")
    func commentsAndGrantsFollowTheirFunction() throws {
        var misplaced: [String] = []
        var commented = 0
        for file in try MigratedTemplate.definitions() {
            var current: String?
            for statement in file.statements {
                guard let (name, creates) = Self.functionNamed(by: statement) else {
                    current = nil
                    continue
                }
                if creates {
                    current = name
                } else {
                    commented += 1
                    if name != current { misplaced.append("\(file.fileName): \(name)'s \(MigrationFile.command(of: statement).prefix(7)) follows \(current ?? "no function")") }
                }
            }
        }
        #expect(commented > 200, "the reader finds the comments and grants")
        #expect(misplaced.isEmpty, "\(misplaced.joined(separator: "\n"))")
    }

    @Test("99_released_overloads.sql holds only overloads the release still serving calls, each beside a successor of the same name elsewhere")
    func releasedOverloadsAreShims() throws {
        let files = try MigratedTemplate.definitions()
        let kept = try #require(files.first { $0.fileName == Self.releasedOverloads })
        let keptNames = kept.statements.compactMap { Self.functionNamed(by: $0) }.filter(\.creates).map(\.name)
        #expect(!keptNames.isEmpty)
        let released = Set(try Self.releasedSignatures().map { String($0.prefix { $0 != "(" }) })
        let elsewhere = Set(files.filter { $0.fileName != kept.fileName }.flatMap { $0.statements.compactMap { Self.functionNamed(by: $0) }.filter(\.creates).map(\.name) })
        for name in keptNames {
            #expect(released.contains(name), "\(name) is not a released function")
            #expect(elsewhere.contains(name), "\(name) has no successor outside the file")
        }
    }

    @Test("the caller check is written once, in require_caller(); authenticate() checks the session")
    func callerCheckedOnce() throws {
        var raising: [String] = []
        for file in try MigratedTemplate.definitions() {
            for statement in file.statements where statement.contains("errcode = 'ZN401'") {
                if let (name, _) = Self.functionNamed(by: statement) { raising.append(name) }
            }
        }
        #expect(raising.sorted() == ["authenticate", "require_caller"])
    }

    @Test("every function the release still serving calls keeps its name, arguments and result")
    func releasedSignaturesKept() async throws {
        let released = try Self.releasedSignatures()
        #expect(released.count > 50, "released-signatures.txt lists the released functions")
        let current = try await MigratedTemplate.withDatabase { database in
            try await TestDatabase.withPool(database, size: 1) { try await Self.signatures($0) }
        }
        let broken = Self.broken(released: released, current: current)
        #expect(broken.isEmpty, "a definition changed a signature that the previous release calls; add a new name or overload instead, and drop the old one a release later:\n\(broken.joined(separator: "\n"))")
    }

    @Test("a definition file that changes a released function's result or arguments is caught")
    func changedSignatureCaught() async throws {
        var definitions = try MigratedTemplate.definitions()
        let index = try #require(definitions.firstIndex { $0.sql.contains("FUNCTION public.push_outbox_counts()") })
        // The released function replaced by one of another shape, as a careless edit would.
        definitions[index].sql += """

            DROP FUNCTION public.push_outbox_counts();
            CREATE FUNCTION public.push_outbox_counts(older_than interval) RETURNS bigint LANGUAGE sql AS $$ select 0::bigint $$;
            """
        definitions[index].checksum = String(repeating: "e", count: 64)
        let current = try await MigratedTemplate.withDatabase { database in
            try await TestDatabase.withPool(database, size: 1) { pool in
                try await Migrator(pool: pool, files: try MigrationFile.load(from: MigratedTemplate.migrationsDirectory), definitions: definitions, logger: TestDatabase.logger).migrate()
                return try await Self.signatures(pool)
            }
        }
        let broken = Self.broken(released: try Self.releasedSignatures(), current: current)
        #expect(broken.count == 1 && broken[0] == "push_outbox_counts() returns TABLE(pending bigint, dead bigint): now push_outbox_counts(older_than interval) returns bigint", "\(broken)")
    }
}
