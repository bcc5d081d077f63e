import Foundation
import PostgresClient

/// A PostgreSQL cluster of a test's own, for faults that would disturb every other test
/// on the shared cluster, such as a restart.
///
/// It is created with the binaries and the unprivileged user that `scripts/postgres.sh`
/// exports (DIARY_PG_BIN, DIARY_PG_USER), in a folder under .data/scratch, on a free port,
/// with the project's roles, and removed afterwards.
public final class ScratchCluster: Sendable {
    public let directory: URL
    public let port: Int
    private let binaries: URL
    private let owner: String?

    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    private var dataDirectory: String { directory.appendingPathComponent("data").path }
    private var socketDirectory: String { directory.appendingPathComponent("run").path }

    /// A superuser connection to `database` on this cluster.
    public func superuser(database: String = "postgres") -> PostgresConfiguration {
        PostgresConfiguration(host: "127.0.0.1", port: port, user: "postgres", database: database)
    }

    /// Runs `body` with a started cluster, then stops and deletes it.
    public static func with<Result>(_ body: (ScratchCluster) async throws -> Result) async throws -> Result {
        let cluster = try await ScratchCluster()
        do {
            let result = try await body(cluster)
            await cluster.destroy()
            return result
        } catch {
            await cluster.destroy()
            throw error
        }
    }

    private init() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let bin = environment["DIARY_PG_BIN"] else {
            throw PostgresError(kind: .invalidConfiguration, message: "DIARY_PG_BIN is not set: run the tests with `make test`")
        }
        binaries = URL(fileURLWithPath: bin)
        owner = getuid() == 0 ? environment["DIARY_PG_USER"] : nil
        directory = Self.packageRoot.appendingPathComponent(".data/scratch/\(UUID().uuidString.lowercased())")
        port = try Self.freePort()
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("run"), withIntermediateDirectories: true)
        if let owner {
            try await Self.run("/usr/bin/chown", ["-R", owner, directory.path])
        }
        try await runAsOwner("initdb", ["-D", dataDirectory, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync"])
        try await start()
        try await runAsOwner("psql", ["-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", socketDirectory, "-p", String(port), "-U", "postgres", "-d", "postgres",
                                      "-f", Self.packageRoot.appendingPathComponent("sql/roles.sql").path])
    }

    public func start() async throws {
        try await runAsOwner("pg_ctl", [
            "-D", dataDirectory, "-l", directory.appendingPathComponent("postgres.log").path, "-w", "-t", "30", "start",
            "-o", "-p \(port) -k \(socketDirectory) -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50",
        ])
    }

    /// `pg_ctl restart -m fast`: returns once the cluster accepts connections again.
    public func restart() async throws {
        // Without -l the new postmaster would write its log into our pipe, which nobody drains.
        try await runAsOwner("pg_ctl", ["-D", dataDirectory, "-l", directory.appendingPathComponent("postgres.log").path, "-m", "fast", "-w", "-t", "30", "restart"])
    }

    public func stop() async throws {
        try await runAsOwner("pg_ctl", ["-D", dataDirectory, "-m", "fast", "-w", "stop"])
    }

    private func destroy() async {
        try? await stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private func runAsOwner(_ tool: String, _ arguments: [String]) async throws {
        let path = binaries.appendingPathComponent(tool).path
        if let owner {
            try await Self.run("/usr/sbin/runuser", ["-u", owner, "--", path] + arguments)
        } else {
            try await Self.run(path, arguments)
        }
    }

    /// Runs a tool to its end, its output in a file (`Spawn.start`: after `pg_ctl start` the
    /// postmaster keeps whatever descriptors it was given).
    private static func run(_ executable: String, _ arguments: [String]) async throws {
        let outputPath = FileManager.default.temporaryDirectory.appendingPathComponent("scratch-cluster-\(UUID().uuidString).log").path
        defer { try? FileManager.default.removeItem(atPath: outputPath) }
        let process: SpawnedProcess
        do {
            process = try Spawn.start(executable, arguments, outputPath: outputPath)
        } catch {
            throw PostgresError(kind: .other, message: "cannot start \(executable): \(error)")
        }
        let status = try await process.exit()
        guard status == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw PostgresError(kind: .other, message: "\(executable) \(arguments.joined(separator: " ")) exited with status \(status): \(text)")
        }
    }

    /// A port nothing listens on now, for a server started next (a child process, a cluster).
    ///
    /// Taken at random below the kernel's ephemeral range, never from it (port 0): between this
    /// check and the server's own bind, any of the suites' thousands of outgoing connections
    /// may be given an ephemeral port, and the server then fails with EADDRINUSE.
    public static func freePort() throws -> Int {
        let ephemeralStart = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
            .flatMap { $0.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } } ?? 32768
        let candidates = 10_000..<max(ephemeralStart, 10_001)
        for _ in 0..<100 {
            let port = Int.random(in: candidates)
            if try isFree(port) { return port }
        }
        throw PostgresError(kind: .other, message: "no free port below \(ephemeralStart) after 100 tries")
    }

    /// Whether 127.0.0.1:`port` can be bound now.
    static func isFree(_ port: Int) throws -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw PostgresError(kind: .other, message: "socket() failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        return withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) == 0 }
        }
    }
}
