import AsyncHTTPClient
import Foundation
import NIOCore
import PostgresClient
import Testing
import TestSupport

/// compose.yaml's server, without Docker: the binary started exactly as the Dockerfile's
/// CMD starts it, as a user who owns nothing but the data folder, in a root-owned working
/// folder, with the Dockerfile's ENV and compose's environment. Root only (it switches user).
@Suite("The container's start, without Docker", .enabled(if: getuid() == 0, "switching users needs root"))
struct ContainerStartTests {
    static let serviceUser = "diary-postgres"

    /// The final stage's ENV pairs and CMD of the Dockerfile.
    static func dockerfile() throws -> (environment: [String: String], command: [String]) {
        let text = try String(contentsOf: ScratchCluster.packageRoot.appendingPathComponent("Dockerfile"), encoding: .utf8)
        let finalStage = text.components(separatedBy: "\nFROM ").last ?? text
        var environment: [String: String] = [:]
        var command: [String] = []
        for line in finalStage.split(separator: "\n") {
            if line.hasPrefix("ENV ") {
                for pair in line.dropFirst(4).split(separator: " ") {
                    let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                    if parts.count == 2 { environment[parts[0]] = parts[1] }
                }
            } else if line.hasPrefix("CMD ") {
                command = try JSONDecoder().decode([String].self, from: Data(line.dropFirst(4).utf8))
            }
        }
        return (environment, command)
    }

    /// compose.yaml's `server.environment`, but for the database URLs (the test's database instead).
    static func composeEnvironment() throws -> [String: String] {
        let text = try String(contentsOf: ScratchCluster.packageRoot.appendingPathComponent("compose.yaml"), encoding: .utf8)
        guard let server = text.range(of: "\n  server:\n"), let environment = text.range(of: "    environment:\n", range: server.upperBound..<text.endIndex) else {
            throw HarnessError("compose.yaml has no server environment")
        }
        var values: [String: String] = [:]
        for line in text[environment.upperBound...].split(separator: "\n") {
            guard line.hasPrefix("      ") else { break }
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("#") { continue }
            let parts = trimmed.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].hasSuffix("DATABASE_URL") else { continue }
            values[parts[0]] = parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        return values
    }

    @Test("the Dockerfile's CMD, as a non-root user in a root-owned /app, migrates, serves, and lets the README's flow sign in")
    func startsAsInTheImage() async throws {
        let (imageEnvironment, command) = try Self.dockerfile()
        #expect(!command.isEmpty, "the Dockerfile has a CMD")
        // /app as the image has it: root's, with the data folder the Dockerfile makes for the user.
        let app = FileManager.default.temporaryDirectory.appendingPathComponent("diary-image-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: app, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: app) }
        for item in ["sql", "openapi.yaml"] {
            try FileManager.default.copyItem(at: ScratchCluster.packageRoot.appendingPathComponent(item), to: app.appendingPathComponent(item))
        }
        let bin = app.appendingPathComponent("bin")
        try FileManager.default.createDirectory(at: bin, withIntermediateDirectories: true)
        // Copied by cp, in a process of its own: a copy written from this process has its file
        // open for writing, and a child that another test spawns meanwhile inherits that
        // descriptor, so that exec would fail with "Text file busy" while the child lives.
        let copy = try await Spawn.run("/bin/cp", [ServerProcess.binary.path, bin.appendingPathComponent("diary-server").path])
        try #require(copy.status == 0, "cp: \(copy.output)")
        var environment = imageEnvironment.mapValues { $0.replacingOccurrences(of: "/app", with: app.path) }
        if let data = environment["DIARY_DATA_DIR"] {
            try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
            #expect(try await Spawn.run("/bin/chown", [Self.serviceUser, data]).status == 0)
        }
        try await MigratedTemplate.withDatabase { database in
            // As compose's database: owned by the role that migrates.
            try await TestDatabase.withAdminPool { try await $0.query(PostgresQuery(unsafeSQL: "alter database \(database.database!) owner to \(TestDatabase.ownerRole)")) }
            let port = try ScratchCluster.freePort()
            environment.merge(try Self.composeEnvironment()) { image, _ in image }
            environment["PORT"] = String(port)
            environment["HOST"] = "127.0.0.1"
            environment["DATABASE_URL"] = try ServerProcess.url(of: database.as(TestDatabase.appRole))
            environment["MIGRATION_DATABASE_URL"] = try ServerProcess.url(of: database.as(TestDatabase.ownerRole))
            environment["PATH"] = bin.path + ":/usr/bin:/bin"
            let log = app.appendingPathComponent("server.log").path
            let shell = "cd \(app.path) && " + command.joined(separator: " ").replacingOccurrences(of: "sh -c ", with: "")
            let arguments = ["-u", Self.serviceUser, "--", "/usr/bin/env", "-i"] + environment.map { "\($0.key)=\($0.value)" } + ["/bin/sh", "-c", shell]
            let process = try Spawn.start("/usr/sbin/runuser", arguments, environment: [:], outputPath: log)
            defer { _ = kill(process.pid, SIGTERM) }
            let http = HTTPClient.shared
            // Healthy, or the process gave up; either ends the wait.
            let healthy = (try? await waitForValue("the server to answer /health or exit", within: .seconds(60)) { () -> Bool? in
                guard process.isRunning else { return false }
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)/health")
                request.method = .GET
                if let response = try? await http.execute(request, timeout: .seconds(2)), response.status == .ok { return true }
                return nil
            }) ?? false
            let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(healthy, "the server did not come up: \(output.suffix(2000))")
            guard healthy else { return }
            var signIn = HTTPClientRequest(url: "http://127.0.0.1:\(port)/v1/auth/dev")
            signIn.method = .POST
            signIn.headers.add(name: "content-type", value: "application/json")
            signIn.body = .bytes(ByteBuffer(string: #"{"name":"aiko"}"#))
            let response = try await http.execute(signIn, timeout: .seconds(10))
            #expect(response.status == .ok, "dev sign-in, as the README's flow does: \(response.status)")
            // What the server wrote went to the data folder, not to root's /app.
            let written = try FileManager.default.contentsOfDirectory(atPath: environment["DIARY_DATA_DIR"] ?? "")
            #expect(written.contains("jwt.key"))
        }
    }
}
