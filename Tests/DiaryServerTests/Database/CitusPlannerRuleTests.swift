import Foundation
import PostgresClient
import Testing
import TestSupport
@testable import DiaryServer

/// What Citus's planner refuses in a function's statements, found in the schema's function
/// bodies on one PostgreSQL, so that `make test` catches it before the cluster suite does:
///
/// | rule | Citus's words |
/// |---|---|
/// | DO UPDATE SET calls only IMMUTABLE functions | functions used in the DO UPDATE SET clause of INSERTs on distributed tables must be marked IMMUTABLE |
/// | an UPDATE's SET calls no VOLATILE function | functions used in UPDATE queries on distributed tables must not be VOLATILE |
/// | a CASE or COALESCE in an UPDATE's SET calls only IMMUTABLE functions | non-IMMUTABLE functions are not allowed in CASE or COALESCE statements |
/// | a SQL function with parameters reads no table laid out by diary | could not create distributed plan … parameters in SQL functions |
///
/// Every table of the schema is one of Citus's (`CitusSchema.placements`), so the rules hold
/// for every UPDATE. The reading is textual (comments and string literals taken out first):
/// a statement spelled past it escapes, which the cluster suite then catches.
struct CitusPlannerRules {
    /// Each function's name and its strongest volatility: "i" < "s" < "v".
    var volatility: [String: String]
    var tablesByDiary: Set<String>

    /// The body as the rules read it: lowercase, without comments and string literals.
    static func normalized(_ body: String) -> String {
        var text = body.lowercased()
        text = text.replacing(/--[^\n]*/, with: "")
        text = text.replacing(/'(?:[^']|'')*'/, with: "''")
        return text.replacing(/\s+/, with: " ")
    }

    /// The functions a piece of SQL calls, by name.
    func calls(in text: Substring) -> [String] {
        text.matches(of: /([a-z_][a-z0-9_]*)\s*\(/).map { String($0.1) }.filter { volatility[$0] != nil }
    }

    /// The segments `case … end` and `coalesce(…)` of `text`, nested ones included.
    static func conditionals(in text: Substring) -> [Substring] {
        var found: [Substring] = []
        let words = Array(text.matches(of: /\b(case|end)\b|coalesce\s*\(/))
        for (index, word) in words.enumerated() where word.output.1 == "case" {
            var depth = 0
            for later in words[index...] {
                if later.output.1 == "case" { depth += 1 } else if later.output.1 == "end" { depth -= 1 }
                if depth == 0 { found.append(text[word.range.lowerBound..<later.range.upperBound]); break }
            }
        }
        for word in words where word.output.1 == nil {
            var depth = 0, index = text.index(before: word.range.upperBound)
            while index < text.endIndex {
                if text[index] == "(" { depth += 1 } else if text[index] == ")" { depth -= 1 }
                if depth == 0 { found.append(text[word.range.lowerBound...index]); break }
                index = text.index(after: index)
            }
        }
        return found
    }

    /// What the rules find in one function's body, each as a sentence.
    func findings(language: String, arguments: Int, body: String) -> [String] {
        let text = Self.normalized(body)
        var found: [String] = []
        for match in text.matches(of: /do update set (.*?)(?=\bwhere\b|\breturning\b|;|$)/) {
            for call in calls(in: match.1) where volatility[call] != "i" {
                found.append("\(call)() in DO UPDATE SET is not IMMUTABLE")
            }
        }
        for match in text.matches(of: /\bupdate (?:only )?[a-z_.]+(?: (?:as )?[a-z_]+)? set (.*?)(?=\bfrom\b|\bwhere\b|\breturning\b|;|$)/) {
            for call in calls(in: match.1) where volatility[call] == "v" {
                found.append("\(call)() in an UPDATE's SET is VOLATILE")
            }
            for conditional in Self.conditionals(in: match.1) {
                for call in calls(in: conditional) where volatility[call] != "i" {
                    found.append("\(call)() in a CASE or COALESCE of an UPDATE's SET is not IMMUTABLE")
                }
            }
        }
        if language == "sql", arguments > 0 {
            for match in text.matches(of: /\b(?:from|join|update|into) (?:public\.)?([a-z_]+)\b/) where tablesByDiary.contains(String(match.1)) {
                found.append("a SQL function with parameters reads \(match.1), which is laid out by diary")
            }
        }
        return found
    }
}

@Suite("What Citus's planner refuses, found on one PostgreSQL")
struct CitusPlannerRuleTests {
    static func rules(_ pool: PostgresPool) async throws -> CitusPlannerRules {
        var volatility: [String: String] = [:]
        for row in try await pool.query("select proname::text as name, max(provolatile::text) as volatility from pg_proc group by proname") {
            volatility[try row.decode("name", as: String.self)] = try row.decode("volatility", as: String.self)
        }
        let tablesByDiary = Set(CitusSchema.placements.compactMap { if case .byDiary = $0.placement { $0.table } else { nil } })
        return CitusPlannerRules(volatility: volatility, tablesByDiary: tablesByDiary)
    }

    @Test("no function of the schema holds a statement Citus refuses to plan")
    func schemaKeepsTheRules() async throws {
        let findings = try await MigratedTemplate.withDatabase { database in
            try await TestDatabase.withPool(database, size: 1) { pool in
                let rules = try await Self.rules(pool)
                let rows = try await pool.query("""
                    select p.proname::text as name, l.lanname::text as language, p.pronargs::int8 as arguments, p.prosrc as body
                    from pg_proc p join pg_language l on l.oid = p.prolang
                    where p.pronamespace = 'public'::regnamespace and l.lanname in ('sql', 'plpgsql')
                      and not exists (select from pg_depend d where d.objid = p.oid and d.deptype = 'e')
                    """)
                #expect(rows.count > 50)
                return try rows.flatMap { row in
                    let name = try row.decode("name", as: String.self)
                    return rules.findings(language: try row.decode("language"), arguments: try row.decode("arguments"), body: try row.decode("body"))
                        .map { "\(name): \($0)" }
                }
            }
        }
        #expect(findings.isEmpty, "\(findings.joined(separator: "\n"))")
    }

    @Test("the rules find what the cluster refused, as the functions were written before")
    func rulesFindTheRefusedStatements() async throws {
        let rules = try await MigratedTemplate.withDatabase { database in
            try await TestDatabase.withPool(database, size: 1) { try await Self.rules($0) }
        }
        let device = rules.findings(language: "plpgsql", arguments: 2, body: """
            insert into devices as d (token, user_id, environment) values (device_token, caller, device_environment)
            on conflict (token) do update set
                created_at = case when d.user_id = excluded.user_id then d.created_at else now() end, -- now() in a comment
                registered_at = now();
            """)
        #expect(device == ["now() in DO UPDATE SET is not IMMUTABLE", "now() in DO UPDATE SET is not IMMUTABLE"])
        let rotation = rules.findings(language: "plpgsql", arguments: 1, body: "update diaries d set invite_code = generate_invite_code() where d.id = diary;")
        #expect(rotation == ["generate_invite_code() in an UPDATE's SET is VOLATILE"])
        let expiration = rules.findings(language: "plpgsql", arguments: 1, body: """
            update users u set premium_expires_at = least(coalesce(e.expiration_at, now()), now()), premium_event_at = e.event_at
            where u.id = target;
            """)
        #expect(expiration == ["now() in a CASE or COALESCE of an UPDATE's SET is not IMMUTABLE"])
        let reminder = rules.findings(language: "plpgsql", arguments: 2, body: """
            update reminder_schedule s set next_at = case when todays is null then 'infinity'
                else reminder_instant(r.time_zone, r.at_time, today + 1) end where s.user_id = r.user_id;
            """)
        #expect(reminder == ["reminder_instant() in a CASE or COALESCE of an UPDATE's SET is not IMMUTABLE"])
        let claim = rules.findings(language: "sql", arguments: 2, body: """
            with due as (select o.id from push_outbox o limit max_rows)
            select 1 from due where exists (select 1 from entries e where e.id = due.id)
            """)
        #expect(claim == ["a SQL function with parameters reads entries, which is laid out by diary"])
        // What passes: a value bound in, an IMMUTABLE function, a literal that looks like a call.
        #expect(rules.findings(language: "plpgsql", arguments: 1, body: """
            update diaries d set invite_code = code, name = lower(d.name), settings = 'now()' where d.id = diary;
            """).isEmpty)
    }
}
