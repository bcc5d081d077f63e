import Foundation
import Glibc
import TestSupport

/// `Fixtures/faulty_proxy.py` in front of the checked bucket (TEST_S3_ENDPOINT): a store that
/// refuses every request with 503 SlowDown (`refuse`), takes requests and never answers
/// (`stall`), or cuts each answer off after some bytes (`cut:N`), as moto cannot on demand.
struct FaultyProxy: Sendable {
    let process: SpawnedProcess
    let endpoint: URL

    /// Runs `body` with the proxy's endpoint, and stops the proxy after it.
    static func with<Result: Sendable>(_ mode: String, _ body: (URL) async throws -> Result) async throws -> Result {
        let proxy = try await start(mode)
        do {
            let result = try await body(proxy.endpoint)
            await proxy.stop()
            return result
        } catch {
            await proxy.stop()
            throw error
        }
    }

    static func start(_ mode: String) async throws -> FaultyProxy {
        let upstream = try TestBucket.configuration().endpoint
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/faulty_proxy.py").path
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("faulty-proxy-\(UUID().uuidString).log").path
        let process = try Spawn.start("/usr/bin/env", ["python3", "-u", script, String(upstream.port ?? 80), mode], outputPath: output)
        // It prints its port once it listens: the event to wait for.
        do {
            let port = try await waitForValue("faulty_proxy.py listens") { () -> Int? in
                let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
                guard process.isRunning else { throw SpawnError("faulty_proxy.py ended: \(text)") }
                return text.split(separator: "\n").first { $0.hasPrefix("listening ") }.flatMap { Int($0.dropFirst(10)) }
            }
            return FaultyProxy(process: process, endpoint: URL(string: "http://127.0.0.1:\(port)")!)
        } catch {
            kill(process.pid, SIGKILL)
            throw error
        }
    }

    func stop() async {
        kill(process.pid, SIGKILL)
        _ = try? await process.exit()
    }
}
