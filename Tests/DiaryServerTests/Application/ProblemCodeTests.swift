import Foundation
import Testing
@testable import DiaryHTTP

/// The codes a client may meet are one list (`ProblemCode`); the contract and the README
/// name exactly those.
@Suite("Problem codes")
struct ProblemCodeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static var codes: [String] { ProblemCode.allCases.map(\.rawValue) }

    @Test("openapi.yaml's Problem.code enum is ProblemCode, in the same order")
    func openAPIEnum() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        let problem = try #require(text.range(of: "    Problem:\n"))
        let code = try #require(text.range(of: "        code:\n", range: problem.upperBound..<text.endIndex))
        let open = try #require(text.range(of: "enum: [", range: code.upperBound..<text.endIndex))
        let close = try #require(text.range(of: "]", range: open.upperBound..<text.endIndex))
        let listed = text[open.upperBound..<close.lowerBound].split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(listed == Self.codes)
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
