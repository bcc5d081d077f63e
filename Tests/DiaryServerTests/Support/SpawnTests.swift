import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// What the tests' children inherit. A PostgreSQL a test starts (`scripts/citus.sh
/// start-node`) lives on, and every descriptor it inherited stays open in it: a server's
/// socket then never reaches its peer's end when the server closes it, and a client that
/// reuses the connection waits forever (CitusOutageTests.coordinatorRestarted hung so).
@Suite("Spawned processes")
struct SpawnTests {
    @Test("a child started by Spawn, run or start, inherits none of the test process's descriptors: only its standard input, output and error")
    func childInheritsNoDescriptor() async throws {
        // This process holds hundreds of sockets and files while the suites run, and this one more.
        let held = open("/dev/null", O_RDONLY)
        defer { close(held) }
        #expect(held > 2)
        let ran = try await Spawn.run("/bin/ls", ["-1", "/proc/self/fd"])
        let descriptors = ran.output.split(separator: "\n").compactMap { Int($0) }
        // ls's own: 0, 1 and 2, and the lowest free one, 3, that it reads /proc/self/fd through.
        #expect(!descriptors.isEmpty && descriptors.allSatisfy { $0 <= 3 }, "\(descriptors)")

        let output = FileManager.default.temporaryDirectory.appendingPathComponent("spawn-\(UUID().uuidString).txt").path
        defer { try? FileManager.default.removeItem(atPath: output) }
        let started = try Spawn.start("/bin/ls", ["-1", "/proc/self/fd"], outputPath: output)
        #expect(try await started.exit() == 0)
        let listed = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").compactMap { Int($0) }
        #expect(!listed.isEmpty && listed.allSatisfy { $0 <= 3 }, "\(listed)")
    }
}
