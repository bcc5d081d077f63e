import DiaryKit
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The real diary-server binary (DIARYKIT_SERVER_BINARY, else the repository's debug build),
/// serving a fresh database on the test cluster (PGHOST and PGPORT, as `make test` and
/// `scripts/postgres.sh env` set them), with development sign-in. No server code is imported:
/// DiaryKit meets the server as an app does.
final class LiveServer: @unchecked Sendable {
    let port: Int
    let database: String
    let dataDirectory: URL
    let extraEnvironment: [String: String]
    /// The HS256 key the server signs tokens with, written here so tests can make an expired one.
    let jwtKey: String
    private let lock = NSLock()
    private var process: Process?

    var url: URL { URL(string: "http://127.0.0.1:\(port)")! }
    var logPath: String { dataDirectory.appendingPathComponent("server.log").path }

    /// The server's repository: DIARYKIT_SERVER_ROOT, else the one this package sits in
    /// (Clients/DiaryKit/Tests/DiaryKitTests/Support/LiveServer.swift, six folders down).
    static var serverRoot: URL {
        if let path = ProcessInfo.processInfo.environment["DIARYKIT_SERVER_ROOT"] { return URL(fileURLWithPath: path) }
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<6 { root.deleteLastPathComponent() }
        return root
    }

    static var binary: String {
        ProcessInfo.processInfo.environment["DIARYKIT_SERVER_BINARY"]
            ?? serverRoot.appendingPathComponent(".build/debug/diary-server").path
    }

    /// Creates the database, migrates it, and starts the server; `environment` adds settings
    /// (MAINTENANCE_MODE, MINIMUM_APP_VERSION, …).
    static func start(environment: [String: String] = [:]) async throws -> LiveServer {
        let server = try LiveServer(environment: environment)
        try await server.prepare()
        try await server.launch()
        return server
    }

    /// Runs `body` against a new server, stopped and its database dropped afterwards.
    static func with<Result>(environment: [String: String] = [:], _ body: (LiveServer) async throws -> Result) async throws -> Result {
        let server = try await start(environment: environment)
        do {
            let result = try await body(server)
            await server.shutDown()
            return result
        } catch {
            let log = (try? String(contentsOfFile: server.logPath, encoding: .utf8)) ?? ""
            await server.shutDown()
            throw LiveServerError("\(error)\n--- server log (last 2000 characters) ---\n\(log.suffix(2000))")
        }
    }

    private init(environment: [String: String]) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw LiveServerError("\(Self.binary) is missing: run `swift build --product diary-server` in the repository root, or set DIARYKIT_SERVER_BINARY")
        }
        guard ProcessInfo.processInfo.environment["PGHOST"] != nil, ProcessInfo.processInfo.environment["PGPORT"] != nil else {
            throw LiveServerError("PGHOST and PGPORT are not set: start the test cluster (`scripts/postgres.sh start; eval \"$(scripts/postgres.sh env)\"`)")
        }
        port = try Self.freePort()
        database = "diarykit_\(UUID().uuidString.prefix(8).lowercased())"
        dataDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("diarykit-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        jwtKey = (0..<48).map { _ in String("abcdefghijklmnopqrstuvwxyz0123456789".randomElement()!) }.joined()
        try Data(jwtKey.utf8).write(to: dataDirectory.appendingPathComponent("jwt.key"))
        extraEnvironment = environment
    }

    private var pg: (host: String, port: String) {
        let environment = ProcessInfo.processInfo.environment
        return (environment["PGHOST"]!, environment["PGPORT"]!)
    }

    private func databaseURL(role: String) -> String {
        "postgres://\(role)@localhost:\(pg.port)/\(database)?host=\(pg.host)"
    }

    private func prepare() async throws {
        try await Self.run("/usr/bin/env", ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-U", "postgres", "-d", "postgres",
                                            "-c", "create database \(database) owner diary_owner strategy file_copy"])
        try await Self.run(Self.binary, ["migrate"], environment: [
            "MIGRATION_DATABASE_URL": databaseURL(role: "diary_owner"), "DATABASE_URL": databaseURL(role: "diary_owner"),
            "DIARY_MIGRATIONS_DIR": Self.serverRoot.appendingPathComponent("sql/migrations").path,
        ])
    }

    /// Starts the server process (again, after `stop`, on the same port and keys) and waits
    /// until it answers.
    func launch() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["DATABASE_URL"] = databaseURL(role: "diary_app")
        environment["MIGRATION_DATABASE_URL"] = nil
        environment["HOST"] = "127.0.0.1"
        environment["PORT"] = String(port)
        environment["DIARY_DEV_AUTH"] = "1"
        environment["DIARY_ENV"] = nil
        environment["DIARY_DATA_DIR"] = dataDirectory.path
        environment["DIARY_JWT_KEY_FILE"] = dataDirectory.appendingPathComponent("jwt.key").path
        environment["LOG_LEVEL"] = "notice"
        environment["DB_POOL_SIZE"] = "4"
        environment["DIARY_OPENAPI_FILE"] = Self.serverRoot.appendingPathComponent("openapi.yaml").path
        environment.merge(extraEnvironment) { _, new in new }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["serve"]
        process.environment = environment
        if !FileManager.default.fileExists(atPath: logPath) { _ = FileManager.default.createFile(atPath: logPath, contents: nil) }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        try log.seekToEnd()
        process.standardOutput = log
        process.standardError = log
        try process.run()
        lock.withLock { self.process = process }
        let probe = DiaryClient(configuration: .init(serverURL: url, realtimeTransport: WSClientRealtimeTransport()))
        try await waitUntil("the server on port \(port) answers (log: \(logPath))", within: .seconds(30)) {
            guard process.isRunning else { throw LiveServerError("the server exited at start-up; log: \(self.logPath)") }
            return (try? await probe.serviceStatus()) != nil
        }
    }

    /// Stops the server as a deployment would (SIGTERM) and waits for it to exit.
    func stop() async throws {
        guard let process = lock.withLock({ self.process }) else { return }
        process.terminate()
        try await waitUntil("the server exits", within: .seconds(20)) { !process.isRunning }
        lock.withLock { self.process = nil }
    }

    func shutDown() async {
        if let process = lock.withLock({ self.process }), process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        _ = try? await Self.run("/usr/bin/env", ["psql", "-X", "-q", "-U", "postgres", "-d", "postgres",
                                                 "-c", "drop database if exists \(database) with (force)"])
        try? FileManager.default.removeItem(at: dataDirectory)
    }

    /// A new client for this server, with its own session storage.
    func client(appVersion: String? = nil, storage: any SessionStorage = InMemorySessionStorage(),
                requestTimeout: Duration = .seconds(60)) -> DiaryClient {
        DiaryClient(configuration: .init(serverURL: url, appVersion: appVersion, sessionStorage: storage, requestTimeout: requestTimeout,
                                         realtimeTransport: WSClientRealtimeTransport()))
    }

    /// A client signed in by name.
    func signedIn(_ name: String, appVersion: String? = nil) async throws -> DiaryClient {
        let client = client(appVersion: appVersion)
        try await client.signInForDevelopment(name: name)
        return client
    }

    /// aiko's couple diary `name`, which ren has joined; both signed in.
    func couple(_ name: String) async throws -> (aiko: DiaryClient, ren: DiaryClient, diary: Diary) {
        let aiko = try await signedIn("aiko")
        let ren = try await signedIn("ren")
        let diary = try await aiko.createDiary(name: name, type: .couple)
        // By the link, as a tap in LINE would give it; CoreFlowTests joins by the code.
        _ = try await ren.joinDiary(inviteCode: diary.inviteURL)
        return (aiko, ren, diary)
    }

    @discardableResult
    static func run(_ executable: String, _ arguments: [String], environment extra: [String: String] = [:]) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(extra) { _, new in new }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw LiveServerError("\(executable) \(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(text)")
        }
        return text
    }

    /// A port nothing listens on now, for the server started next: at random below the kernel's
    /// ephemeral range (as the server's tests choose theirs), where no outgoing connection can
    /// be given it before the server binds it.
    static func freePort() throws -> Int {
        let ephemeralStart = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8))
            .flatMap { $0.split(whereSeparator: \.isWhitespace).first.flatMap { Int($0) } } ?? 32768
        for _ in 0..<100 {
            let port = Int.random(in: 10_000..<max(ephemeralStart, 10_001))
            if try isFree(port) { return port }
        }
        throw LiveServerError("no free port below \(ephemeralStart) after 100 tries")
    }

    static func isFree(_ port: Int) throws -> Bool {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw LiveServerError("socket() failed") }
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

struct LiveServerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Polls `condition` until it holds, failing after `limit`: tests wait for what they can
/// observe, never for a fixed time.
func waitUntil(_ what: String, within limit: Duration, every interval: Duration = .milliseconds(50),
               _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + limit
    while ContinuousClock.now < deadline {
        if try await condition() { return }
        try await Task.sleep(for: interval)
    }
    throw LiveServerError("timed out after \(limit) waiting for \(what)")
}
