#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
package import NIOPosix
package import PostgresClient

/// A PostgreSQL client program (pg_dump, pg_restore) run as a child process.
///
/// The child is awaited through `terminationHandler`, and its output is drained on NIO's
/// thread pool, so no event loop and no task of the cooperative pool waits on it. Cancelling
/// the awaiting task kills the child: a server shutting down does not leave a dump running.
package struct ExternalTool: Sendable {
    package enum Failure: Error, CustomStringConvertible, Equatable {
        case notFound(name: String, override: String?)
        /// `status` is the exit status, or the signal that killed it when `signaled`.
        case failed(name: String, status: Int32, signaled: Bool, output: String)

        package var description: String {
            switch self {
            case .notFound(let name, nil):
                "\(name) is not on PATH; install the PostgreSQL client tools or give its path (\(name.uppercased()))"
            case .notFound(let name, let override?):
                "\(name) at \(override) is not an executable file"
            case .failed(let name, let status, let signaled, let output):
                (signaled ? "\(name) was killed by signal \(status)" : "\(name) exited with status \(status)") + (output.isEmpty ? "" : ": \(output)")
            }
        }
    }

    package let name: String
    package let path: String

    package init(name: String, path: String) {
        self.name = name
        self.path = path
    }

    /// `override` (PG_DUMP, PG_RESTORE) if given, else the first executable `name` in the
    /// `searchPath` directories (PATH, colon-separated). The caller reads both from its
    /// environment: DiaryCore reads none.
    package static func locate(_ name: String, override: String?, searchPath: String?) throws -> ExternalTool {
        if let override, !override.isEmpty {
            guard FileManager.default.isExecutableFile(atPath: override) else { throw Failure.notFound(name: name, override: override) }
            return ExternalTool(name: name, path: override)
        }
        for directory in (searchPath ?? "").split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return ExternalTool(name: name, path: candidate) }
        }
        throw Failure.notFound(name: name, override: nil)
    }

    /// Runs the tool with `arguments`, connected as `connection` says, to its end. Throws
    /// `Failure.failed` with the tail of its output when it exits other than 0.
    @discardableResult
    package func run(_ arguments: [String], connection: PostgresConfiguration? = nil, threadPool: NIOThreadPool = .singleton) async throws -> String {
        try Task.checkCancellation()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        if let connection { environment.merge(Self.environment(for: connection)) { _, new in new } }
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let status: Int32 = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
                process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
                do {
                    try process.run()
                } catch {
                    process.terminationHandler = nil
                    try? pipe.fileHandleForWriting.close()
                    continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            // SIGKILL, not terminate()'s SIGTERM: the child inherits the signal mask of the
            // thread that spawned it, and Swift's and NIO's threads block SIGTERM.
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        }
        // The child has exited, so its end of the pipe is closed and this read ends.
        let data = try await threadPool.runIfActive { pipe.fileHandleForReading.readDataToEndOfFile() }
        let output = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        try Task.checkCancellation()
        guard status == 0, process.terminationReason == .exit else {
            throw Failure.failed(name: name, status: status, signaled: process.terminationReason != .exit, output: String(output.suffix(2000)))
        }
        return output
    }

    /// The connection as libpq's environment variables, one per setting the configuration
    /// holds: the tools then connect as the server's own libpq does, with no conninfo string
    /// built and no password on a command line. What the configuration leaves out, libpq
    /// takes from the inherited environment in both. keepalives have no variable and are dropped.
    package static func environment(for configuration: PostgresConfiguration) -> [String: String] {
        var variables: [String: String] = [
            "PGAPPNAME": configuration.applicationName,
            "PGCONNECT_TIMEOUT": String(configuration.connectTimeoutSeconds),
        ]
        if let host = configuration.host { variables["PGHOST"] = host }
        if let port = configuration.port { variables["PGPORT"] = String(port) }
        if let user = configuration.user { variables["PGUSER"] = user }
        if let password = configuration.password { variables["PGPASSWORD"] = password }
        if let database = configuration.database { variables["PGDATABASE"] = database }
        let names = [
            "hostaddr": "PGHOSTADDR", "sslmode": "PGSSLMODE", "sslrootcert": "PGSSLROOTCERT", "sslcert": "PGSSLCERT",
            "sslkey": "PGSSLKEY", "options": "PGOPTIONS", "target_session_attrs": "PGTARGETSESSIONATTRS",
        ]
        for (keyword, value) in configuration.parameters {
            if let name = names[keyword] { variables[name] = value }
        }
        return variables
    }
}
