import Foundation
import Testing

/// Suites are chosen by test plan (Tests/test-plans.txt, scripts/test-plan.sh), not by skip
/// patterns or by the environment they find.
@Suite("Test plans")
struct TestPlanTests {
    static let root = DocumentationTests.root

    static func plans() throws -> [(plan: String, suites: [String])] {
        try String(contentsOf: root.appendingPathComponent("Tests/test-plans.txt"), encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }
            .map { $0.split(separator: " ", omittingEmptySubsequences: true).map(String.init) }
            .map { ($0[0], Array($0.dropFirst(3))) }
    }

    static func testSources() throws -> [(path: String, text: String)] {
        try LayeringTests.swiftFiles(of: "Tests", under: root).sorted().map {
            ("Tests/\($0)", try String(contentsOf: LayeringTests.tests.appendingPathComponent($0), encoding: .utf8))
        }
    }

    @Test("every suite a plan names is a suite, in one plan only, and main names none")
    func plansNameSuites() throws {
        let plans = try Self.plans()
        let named = plans.flatMap(\.suites)
        #expect(Set(plans.map(\.plan)).isSuperset(of: ["main", "subprocesses", "one-at-a-time", "cluster", "previous-release"]))
        #expect(plans.first { $0.plan == "main" }?.suites == [])
        #expect(plans.filter { $0.plan != "main" && $0.suites.isEmpty }.isEmpty, "a plan that runs nothing")
        #expect(Set(named).count == named.count, "a suite in two plans: \(named)")
        let sources = try Self.testSources().map(\.text).joined(separator: "\n")
        for suite in named {
            #expect(sources.contains(try Regex(#"@Suite\([^\n]*\)\s*\n(?:@[^\n]*\n)*struct \#(suite)\b"#)), "\(suite) is no suite")
        }
    }

    @Test("no suite or test switches itself on or off: a plan's settings are required, not tested for; only a root's privilege is")
    func noSuiteChosenByEnvironment() throws {
        let sources = try Self.testSources()
        #expect(sources.count > 100)
        var gated: [String] = []
        for source in sources {
            for match in source.text.matches(of: /\.(?:enabled|disabled)\(if:[^\n]*/) where !match.output.contains("getuid() == 0") {
                gated.append("\(source.path): \(match.output)")
            }
        }
        #expect(gated.isEmpty, "\(gated)")
    }

    @Test("the Makefile and scripts skip no suite by pattern: scripts/test-plan.sh does, from the plans")
    func noSkipPatterns() throws {
        let scripts = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("scripts").path)
            .filter { $0.hasSuffix(".sh") && $0 != "test-plan.sh" }.map { "scripts/\($0)" }
        var skipping: [String] = []
        for path in ["Makefile", ".ci/run"] + scripts {
            let text = try String(contentsOf: Self.root.appendingPathComponent(path), encoding: .utf8)
            if text.contains(/swift test[^\n]*--skip[ =]/) { skipping.append(path) }
        }
        #expect(skipping.isEmpty, "\(skipping)")
    }
}
