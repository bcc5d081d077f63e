import Foundation
import Testing
import TestSupport

/// scripts/postgres.sh, which `make run` and `make test` start the local cluster with.
@Suite("scripts/postgres.sh")
struct PostgresScriptTests {
    static let script = ScratchCluster.packageRoot.appendingPathComponent("scripts/postgres.sh").path

    static func run(_ command: String, cluster: String, port: Int) async throws -> (status: Int32, output: String) {
        var environment = ProcessInfo.processInfo.environment
        environment["DIARY_PG_CLUSTER"] = cluster
        environment["PGPORT"] = String(port)
        return try await Spawn.run(script, [command], environment: environment)
    }

    @Test("a new PGPORT after a first start restarts the cluster there, and the port file follows")
    func portChange() async throws {
        let cluster = ScratchCluster.packageRoot.appendingPathComponent(".data/scratch/port-\(UUID().uuidString.prefix(8).lowercased())").path
        do {
            try await Self.changePort(cluster: cluster)
        } catch {
            await Self.remove(cluster)
            throw error
        }
        await Self.remove(cluster)
    }

    static func remove(_ cluster: String) async {
        _ = try? await run("stop", cluster: cluster, port: 0)
        try? FileManager.default.removeItem(atPath: cluster)
    }

    static func changePort(cluster: String) async throws {
        let first = try ScratchCluster.freePort()
        let started = try await Self.run("start", cluster: cluster, port: first)
        #expect(started.status == 0, "\(started.output)")
        let second = try ScratchCluster.freePort()
        let moved = try await Self.run("start", cluster: cluster, port: second)
        #expect(moved.status == 0, "\(moved.output)")
        #expect(moved.output.contains("restarting it on \(second)"), "\(moved.output)")
        let portFile = try String(contentsOfFile: cluster + "/port", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(portFile == String(second))
        let ready = try await Spawn.run("/usr/bin/pg_isready", ["-h", "127.0.0.1", "-p", String(second)])
        #expect(ready.status == 0, "nothing listens on the port the file names: \(ready.output)")
        #expect(try await Spawn.run("/usr/bin/pg_isready", ["-h", "127.0.0.1", "-p", String(first)]).status != 0, "the old port still answers")
    }
}
