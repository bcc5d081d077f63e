import Foundation
import Testing

/// The whole suite runs in one process, every suite's servers, pools and sockets at once.
@Suite("The test process's limits")
struct TestProcessLimitsTests {
    /// Below this, connections fail together with EMFILE at the suite's peak, far from the cause.
    static let openFilesNeeded: rlim_t = 8192

    @Test("the test process may open enough files for every suite at once (make test raises the limit)")
    func openFiles() throws {
        var limit = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        #expect(limit.rlim_cur >= Self.openFilesNeeded, "the soft limit on open files is \(limit.rlim_cur): run the tests with `make test`, which raises it, or `ulimit -n \(Self.openFilesNeeded)` first")
    }
}
