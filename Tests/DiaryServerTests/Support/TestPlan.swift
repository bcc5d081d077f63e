import Foundation

/// What a suite of a test plan other than main (Tests/test-plans.txt) is given by the script
/// that runs the plan: the plan chooses the suite, and a run without its setting fails.
enum TestPlan {
    static func setting(_ name: String, plan: String) throws -> String {
        guard let value = ProcessInfo.processInfo.environment[name], !value.isEmpty else {
            throw HarnessError("\(name) is not set: this suite is test plan \(plan)'s (Tests/test-plans.txt), which its script runs")
        }
        return value
    }
}
