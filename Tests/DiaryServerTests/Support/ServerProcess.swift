import AsyncHTTPClient
import DiaryModels
import Foundation
import Hummingbird
import NIOCore
import NIOHTTP1
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// The built `diary-server` binary, serving on a free port with development sign-in.
final class ServerProcess: Sendable {
    struct Reply: Sendable {
        var status: Int
        var body: Data

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try PostgresJSONCoding.decoder.decode(T.self, from: body)
        }
    }

    let port: Int
    private let process: SpawnedProcess
    let logPath: String

    static var binary: URL {
        ScratchCluster.packageRoot.appendingPathComponent(".build/debug/diary-server")
    }

    convenience init(database: PostgresConfiguration, dataDirectory: URL? = nil, environment: [String: String] = [:], binary: URL = ServerProcess.binary) throws {
        try self.init(databaseURL: try Self.url(of: database), dataDirectory: dataDirectory, environment: environment, binary: binary)
    }

    /// `dataDirectory` holds the token key: processes that share one accept each other's tokens.
    /// `environment` adds to or replaces the test process's own. `binary` is this checkout's
    /// build unless a test serves another release.
    init(
        databaseURL: String, databaseWaitSeconds: Int = 5, dataDirectory: URL? = nil, environment extra: [String: String] = [:],
        binary: URL = ServerProcess.binary
    ) throws {
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw HarnessError("\(binary.path) is missing: build it first (`make test` runs `swift build --product diary-server`)")
        }
        port = try ScratchCluster.freePort()
        let scratch = dataDirectory ?? FileManager.default.temporaryDirectory.appendingPathComponent("diary-process-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        logPath = scratch.appendingPathComponent("server-\(port).log").path
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = databaseURL
        environment["HOST"] = "127.0.0.1"
        environment["PORT"] = String(port)
        environment["DIARY_DEV_AUTH"] = "1"
        environment["DIARY_ENV"] = nil
        environment["DIARY_DATA_DIR"] = scratch.path
        environment["LOG_LEVEL"] = "notice"
        environment["DB_WAIT_SECONDS"] = String(databaseWaitSeconds)
        environment.merge(extra) { _, new in new }
        let process = try Spawn.start(binary.path, ["serve"], environment: environment, outputPath: logPath)
        self.process = process
    }

    /// Runs the binary's subcommand `arguments` to its end and returns its exit status and
    /// its output and error streams together.
    static func runCommand(_ arguments: [String], adding extra: [String: String] = [:], binary: URL = ServerProcess.binary) async throws -> (status: Int32, output: String) {
        guard FileManager.default.isExecutableFile(atPath: binary.path) else {
            throw HarnessError("\(binary.path) is missing: build it first (`make test` runs `swift build --product diary-server`)")
        }
        let path = binary.path
        return try await Spawn.run(path, arguments, environment: extra.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(extra) { _, new in new })
    }

    /// DATABASE_URL for `database`, on the test cluster's socket as TEST_DATABASE_URL gives it.
    static func url(of database: PostgresConfiguration) throws -> String {
        guard var components = URLComponents(string: ProcessInfo.processInfo.environment["TEST_DATABASE_URL"] ?? "") else {
            throw HarnessError("TEST_DATABASE_URL is not set")
        }
        components.user = database.user
        components.path = "/" + (database.database ?? "")
        return components.string!
    }

    func terminate() { _ = Foundation.kill(process.pid, SIGTERM) }

    func kill() {
        if process.isRunning { _ = Foundation.kill(process.pid, SIGKILL) }
    }

    func waitForExit(within limit: Duration) async throws -> (status: Int32, after: ContinuousClock.Instant) {
        try await waitUntil("the server's exit (log: \(logPath))", within: limit) { !process.isRunning }
        return (process.terminationStatus, .now)
    }

    func waitUntilHealthy(_ http: HTTPClient) async throws {
        try await waitUntil("the server's health (log: \(logPath))", within: .seconds(30)) {
            if let reply = try? await request(http, .GET, "/health", expecting: nil), reply.status == 200 { return true }
            guard process.isRunning else { throw HarnessError("the server exited at start-up; log: \(logPath)") }
            return false
        }
    }

    /// One request on a connection of its own (`Connection: close`).
    func request(
        _ http: HTTPClient, _ method: HTTPMethod, _ path: String, token: String? = nil, json: String? = nil, expecting expected: Int? = 200,
        timeout: TimeAmount = .seconds(10)
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
        request.method = method
        request.headers.add(name: "Connection", value: "close")
        if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let json {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        // AHC retries a refused connection until the deadline, so the deadline bounds how long "refused" takes to show.
        let response = try await http.execute(request, timeout: timeout)
        let body = try await response.body.collect(upTo: 1 << 20)
        let reply = Reply(status: Int(response.status.code), body: Data(buffer: body))
        if let expected, reply.status != expected && !(expected == 200 && reply.status == 201) {
            throw HarnessError("\(method) \(path) answered \(reply.status): \(String(decoding: reply.body, as: UTF8.self))")
        }
        return reply
    }

    /// A connection refused, or closed before a response: what a stopping server does to requests it has not started.
    /// "I/O on closed channel" is the client finding the connection already closed when it writes the request.
    static func isRefusal(_ description: String) -> Bool {
        ["Connection refused", "Connection reset by peer", "remoteConnectionClosed", "I/O on closed channel"].contains { description.contains($0) }
    }
}
