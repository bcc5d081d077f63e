import Foundation
package import PostgresClient
import Subprocess
import SystemPackage

/// A PostgreSQL client program (pg_dump, pg_restore) run as a child process.
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
    ///
    /// swift-subprocess starts it, not Foundation's `Process`: on Linux `Process.run()` over-reads
    /// a buffer while it lists the parent's open descriptors (swift-corelibs-foundation #5472,
    /// found by `make test-asan`), which a server holding many sockets could crash on in the
    /// middle of a backup. The child gets no descriptor of the server's, and no task or event
    /// loop blocks while it runs. Cancelling the awaiting task kills the child: a server
    /// shutting down does not leave a dump running.
    @discardableResult
    package func run(_ arguments: [String], connection: PostgresConfiguration? = nil) async throws -> String {
        try Task.checkCancellation()
        var variables: [Environment.Key: String?] = [:]
        let connecting: [String: String] = connection.map(Self.environment(for:)) ?? [:]
        for (name, value) in connecting { variables[Environment.Key(stringLiteral: name)] = value }
        let result: ExecutionResult<Void, StringOutput<UTF8>, CombinedErrorOutput>
        do {
            result = try await Subprocess.run(
                .path(FilePath(path)), arguments: Arguments(arguments), environment: .inherit.updating(variables),
                input: .none, output: .string(limit: Self.outputLimit), error: .combinedWithOutput
            )
        } catch let error as SubprocessError {
            // Not started, or more output than the limit: a failed run, reported as the others are.
            throw Failure.failed(name: name, status: -1, signaled: false, output: "\(error)")
        }
        let output = (result.standardOutput ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        try Task.checkCancellation()
        switch result.terminationStatus {
        case .exited(0):
            return output
        case .exited(let status):
            throw Failure.failed(name: name, status: status, signaled: false, output: String(output.suffix(2000)))
        case .signaled(let signal):
            throw Failure.failed(name: name, status: signal, signaled: true, output: String(output.suffix(2000)))
        }
    }

    /// What the tools print (errors, versions) is short: a dump goes to a file.
    static let outputLimit = 4 << 20

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
