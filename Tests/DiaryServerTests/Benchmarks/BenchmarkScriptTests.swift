import DiaryModels
import Foundation
import HTTPTypes
import PostgresClient
import Testing
import TestSupport

@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// `make bench` compares each endpoint with pgbench running "exactly the SQL the server
/// sends" (Benchmarks/endpoints/<name>.sql). This holds the scripts to that: the statements
/// a request really sends, with every `$n` standing for whatever expression the script
/// binds there, must be the script's statements, in order, between BEGIN and COMMIT in
/// one pipeline, followed by what it sends after the COMMIT.
@Suite("The benchmark's pgbench scripts send the server's SQL")
struct BenchmarkScriptTests {
    static let scripts = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Benchmarks/endpoints")

    @Test("each endpoint's script is the transaction its request sends")
    func scriptsMatchTheServer() async throws {
        try await APIHarness.run { api in
            for request in try await BenchmarkedRequest.prepare(api) {
                let recorder = RequestScope.StatementRecorder()
                let reply = try await RequestScope.$recorder.withValue(recorder) {
                    try await api.call(request.method, request.path, token: request.token, json: request.json)
                }
                #expect(reply.status.code < 300, "\(request.script): \(reply.status)")
                let transactions = recorder.recorded
                try #require(transactions.count == 1, "\(request.script): \(transactions.count) transactions")
                let script = try Self.transaction(in: request.script)
                #expect(script.count == transactions[0].count, "\(request.script): the script has \(script.count) statements, the server sent \(transactions[0].count)")
                for (sent, scripted) in zip(transactions[0], script) {
                    #expect(try Self.matches(sent.sql, scripted), "\(request.script): the server sent\n\(Self.normalized(sent.sql))\nthe script has\n\(scripted)")
                }
            }
        }
    }

    /// The server reads its own spelling of claims without JSONDecoder; tokens spelt any
    /// other way would have the benchmark measure a path no real client takes.
    @Test("tokens.py signs tokens the server accepts, with claims spelt as the server spells them")
    func benchmarkTokensTakeTheServersPath() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("bench-tokens-\(UUID())")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let keyBytes = Data((0..<32).map { UInt8($0) })
        try keyBytes.write(to: work.appendingPathComponent("jwt.key"))
        let tokens = try await Spawn.run("/usr/bin/env", [
            "python3", Self.scripts.appendingPathComponent("tokens.py").path,
            work.appendingPathComponent("jwt.key").path, work.appendingPathComponent("users.tsv").path,
        ])
        try #require(tokens.status == 0, "\(tokens.output)")
        let firstLine = try #require(try String(contentsOf: work.appendingPathComponent("users.tsv"), encoding: .utf8).split(separator: "\n").first)
        let token = String(firstLine.split(separator: "\t")[1])
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        try #require(parts.count == 3)
        #expect(TokenService.AccessClaims(signedPayload: try #require(Base64URL.decode(parts[1]))) != nil)
        // The header too is the server's own, which it compares byte for byte instead of parsing.
        let service = TokenService(key: .init(data: keyBytes))
        let ours = try await service.accessToken(for: .init(userID: UUID(), sessionID: UUID()), issuedAt: Date())
        #expect(parts[0] == ours.split(separator: ".")[0])
        await #expect(throws: Never.self) { try await service.verifyAccessToken(token) }
    }

    @Test("the comparison itself: a bind stands for one expression wherever it recurs, everything else must be equal")
    func comparisonCanFail() throws {
        #expect(try Self.matches("select $1 where a = $2 and b = $1", "select md5(:n) where a = 3 and b = md5(:n)"))
        #expect(try !Self.matches("select $1 where a = $2 and b = $1", "select md5(:n) where a = 3 and b = md5(:m)"))
        #expect(try !Self.matches("select $1 where a = $2", "select 1 where a = 3 and true"))
        #expect(try !Self.matches("select $1 from t", "select (1 from t"))
        #expect(try !Self.matches("where a = $1 and $2 = b", "where a = md5(:d) and a = b"))
        #expect(try Self.matches("select 1 -- why\n  from   t", "select 1 from t"))
        #expect(try Self.matches("where x = $1 limit $2", "where x = 'B' || lpad(:d::text, 9, '0') limit 21"))
    }

    /// The statements between BEGIN and COMMIT, comments and meta-commands dropped,
    /// after checking that the script sends them as one pipelined transaction.
    static func transaction(in name: String) throws -> [String] {
        let text = try String(contentsOf: scripts.appendingPathComponent("\(name).sql"), encoding: .utf8)
        let lines = text.split(separator: "\n").map(String.init)
        let meta = lines.filter { $0.hasPrefix("\\") }
        try #require(meta.contains("\\startpipeline") && meta.last == "\\endpipeline", "\(name).sql: not one pipeline")
        let sql = lines.filter { !$0.hasPrefix("\\") }.joined(separator: "\n")
        let statements = normalized(sql).split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        try #require(statements.first == "BEGIN" && statements.contains("COMMIT"), "\(name).sql: not one transaction")
        // What runs after the COMMIT (the announcements) is compared too, COMMIT marking where it starts.
        let body = statements.dropFirst()
        return Array(body.last == "COMMIT" ? body.dropLast() : body)
    }

    /// Comments dropped and whitespace collapsed, so layout is not part of the comparison.
    static func normalized(_ sql: String) -> String {
        sql.split(separator: "\n")
            .map { line in line.range(of: "--").map { String(line[..<$0.lowerBound]) } ?? String(line) }
            .joined(separator: " ")
            .split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// Whether `scripted` is `sent` with each `$n` replaced by an expression, the same one
    /// at every occurrence of that `$n`.
    static func matches(_ sent: String, _ scripted: String) throws -> Bool {
        let placeholder = try NSRegularExpression(pattern: #"\$(\d+)"#)
        let text = normalized(sent)
        var pattern = "^"
        var groups: [String: Int] = [:]
        var last = text.startIndex
        for match in placeholder.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            let whole = Range(match.range, in: text)!
            let number = String(text[Range(match.range(at: 1), in: text)!])
            pattern += NSRegularExpression.escapedPattern(for: String(text[last..<whole.lowerBound]))
            if let group = groups[number] {
                pattern += "\\\(group)"
            } else {
                groups[number] = groups.count + 1
                pattern += "(.+?)"
            }
            last = whole.upperBound
        }
        pattern += NSRegularExpression.escapedPattern(for: String(text[last...])) + "$"
        let regex = try NSRegularExpression(pattern: pattern)
        let target = normalized(scripted)
        guard let match = regex.firstMatch(in: target, range: NSRange(target.startIndex..., in: target)) else { return false }
        return try (0..<groups.count).allSatisfy { try isBoundValue(String(target[Range(match.range(at: $0 + 1), in: target)!])) }
    }

    /// What a script puts where the server binds: one expression over pgbench variables
    /// (`md5('d' || :d)::uuid`), or a constant (`21`, `'text'`, `null::text`), never a column.
    static func isBoundValue(_ text: String) throws -> Bool {
        let constant = try NSRegularExpression(pattern: #"^('([^']|'')*'|\d+|null)(::\w+(\[\])?)?$"#)
        let variable = try NSRegularExpression(pattern: #"(^|[^:]):[a-z_]+"#)
        let range = NSRange(text.startIndex..., in: text)
        let isConstant = constant.firstMatch(in: text, range: range) != nil
        let usesVariable = variable.firstMatch(in: text, range: range) != nil
        return isOneExpression(text) && (isConstant || usesVariable)
    }

    /// A bind stands for one value: balanced, and no clause of its own outside parentheses
    /// and quotes, so that `$2` cannot swallow `3 and true`.
    static func isOneExpression(_ text: String) -> Bool {
        let clauses: Set<String> = ["and", "or", "where", "from", "select", "limit", "order", "on", "join", "group", "having", "union", "returning"]
        var depth = 0
        var quoted = false
        var word = ""
        for character in text + " " {
            if quoted {
                if character == "'" { quoted = false }
                continue
            }
            switch character {
            case "'": quoted = true
            case "(": depth += 1
            case ")":
                depth -= 1
                if depth < 0 { return false }
            default: break
            }
            if depth == 0, character.isLetter {
                word.append(character)
            } else {
                if clauses.contains(word.lowercased()) { return false }
                word = ""
            }
        }
        return depth == 0 && !quoted
    }
}
