import Foundation
import Testing
@testable import DiaryHTTP

/// The codes a client may meet are one list (`ProblemCode`); the contract and the README
/// name exactly those, and DiaryKit, a package of its own that cannot import the server's
/// list, knows exactly the contract's.
@Suite("Problem codes")
struct ProblemCodeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static var codes: [String] { ProblemCode.allCases.map(\.rawValue) }

    /// openapi.yaml's `Problem.code` enum, in its order.
    static func openAPICodes() throws -> [String] {
        let text = try String(contentsOf: Self.root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        let problem = try #require(text.range(of: "    Problem:\n"))
        let code = try #require(text.range(of: "        code:\n", range: problem.upperBound..<text.endIndex))
        let open = try #require(text.range(of: "enum: [", range: code.upperBound..<text.endIndex))
        let close = try #require(text.range(of: "]", range: open.upperBound..<text.endIndex))
        return text[open.upperBound..<close.lowerBound].split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    static func diaryKitSource() throws -> String {
        try String(contentsOf: Self.root.appendingPathComponent("Clients/DiaryKit/Sources/DiaryKit/ProblemCode.swift"), encoding: .utf8)
    }

    /// DiaryKit's known codes with their cases, in the order its `ProblemCode.known` table
    /// lists them (`"diary_full": .diaryFull`).
    static func diaryKitCodes(in source: String) throws -> [(code: String, name: String)] {
        let table = try #require(source.range(of: "static let known: [String: ProblemCode] = ["), "DiaryKit's ProblemCode has no `known` table")
        let end = try #require(source.range(of: "]", range: table.upperBound..<source.endIndex))
        return source[table.upperBound..<end.lowerBound].matches(of: #/"([^"]*)"\s*:\s*\.`?(\w+)`?/#).map { (code: String($0.1), name: String($0.2)) }
    }

    /// The cases DiaryKit's `ProblemCode` declares, one a line, without `unknown(String)`.
    static func diaryKitCases(in source: String) -> [String] {
        source.split(separator: "\n").compactMap { line in
            line.trimmingCharacters(in: .whitespaces).wholeMatch(of: #/case `?(\w+)`?/#).map { String($0.1) }
        }
    }

    @Test("openapi.yaml's Problem.code enum is ProblemCode, in the same order")
    func openAPIEnum() throws {
        #expect(try Self.openAPICodes() == Self.codes)
    }

    @Test("DiaryKit's ProblemCode knows exactly the codes openapi.yaml lists")
    func diaryKitKnowsTheContract() throws {
        let known = try Self.diaryKitCodes(in: try Self.diaryKitSource()).map { $0.code }
        let listed = try Self.openAPICodes()
        #expect(Set(listed).subtracting(known).isEmpty, "DiaryKit lacks \(Set(listed).subtracting(known).sorted()), which openapi.yaml lists")
        #expect(Set(known).subtracting(listed).isEmpty, "DiaryKit knows \(Set(known).subtracting(listed).sorted()), which openapi.yaml does not list")
        // A dictionary literal with a key twice traps when it is first read.
        #expect(Set(known).count == known.count, "DiaryKit's table repeats a code: \(known.sorted())")
    }

    /// `rawValue` looks each case up in the table and traps on one that is missing, so every
    /// case must be there once. The parser must find a known pair, or the tests pass on nothing.
    @Test("each case of DiaryKit's ProblemCode is in its table once, and the reader finds diary_full")
    func diaryKitCasesInTable() throws {
        let source = try Self.diaryKitSource()
        let table = try Self.diaryKitCodes(in: source)
        #expect(table.contains { $0.code == "diary_full" && $0.name == "diaryFull" })
        #expect(table.contains { $0.code == "internal" && $0.name == "internal" })
        let cases = Self.diaryKitCases(in: source)
        #expect(cases.contains("diaryFull") && cases.contains("internal") && !cases.contains("unknown"))
        #expect(table.map { $0.name }.sorted() == cases.sorted(), "cases without a code, or codes of no case")
    }

    @Test("the README lists every code and no other")
    func readmeList() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(text.range(of: "with a stable `code`, one of: "))
        let end = try #require(text.range(of: ".\n", range: start.upperBound..<text.endIndex))
        let listed = text[start.upperBound..<end.lowerBound].split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(in: CharacterSet(charactersIn: "`"))
        }
        #expect(listed == Self.codes)
    }
}
