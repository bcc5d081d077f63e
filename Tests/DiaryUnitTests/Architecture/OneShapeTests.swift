import Foundation
import Testing

/// Recurring things that have one shape, held so that a second one fails here rather than
/// creep back: retry delays come from `Backoff`, and a Duration is taken apart, or handed to
/// SQL, only by the helpers in PostgresClient's Duration+Postgres.swift.
@Suite("One shape for each recurring thing")
struct OneShapeTests {
    /// Lines of the targets under `root` (the server's, unless told) that match `pattern`, outside `exempt` files.
    static func lines<Output>(
        matching pattern: Regex<Output>, in targets: [String], except exempt: Set<String>, under root: URL = LayeringTests.sources
    ) throws -> [String] {
        try targets.flatMap { target in
            let folder = root.appendingPathComponent(target)
            return try LayeringTests.swiftFiles(of: target, under: root).filter { file in !exempt.contains { "\(target)/\(file)".hasPrefix($0) } }.flatMap { file in
                try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8).split(separator: "\n").enumerated()
                    .filter { $0.element.contains(pattern) }.map { "\(target)/\(file):\($0.offset + 1): \($0.element.trimmingCharacters(in: .whitespaces))" }
            }
        }
    }

    static let layers = ["PostgresClient", "DiaryCore", "DiaryHTTP", "DiaryServer"]

    @Test("a retry delay is computed only by Backoff: no doubling, shifting or sleeping by hand")
    func oneBackoff() throws {
        let found = try Self.lines(
            matching: /\* \(1 <<|(delay|backoff|wait)\w* \* 2\b|usleep\(\d|Task\.sleep\(for: \.\w+\(\d+ \*/,
            in: Self.layers, except: ["PostgresClient/Backoff.swift"])
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    @Test("a span is a Duration: nothing is declared a TimeInterval")
    func spansAreDurations() throws {
        let found = try Self.lines(matching: /:\s*TimeInterval\b(?!\()/, in: Self.layers, except: [])
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    @Test("a Duration is taken apart, or handed to SQL, only by Duration+Postgres.swift")
    func oneDurationConversion() throws {
        let found = try Self.lines(
            matching: /components\.(seconds|attoseconds)|make_interval\(secs|::interval/,
            in: Self.layers, except: ["PostgresClient/Duration+Postgres.swift"])
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    @Test("settings are read in DiaryServer/Configuration alone, from the environment they are given")
    func settingsReadInOnePlace() throws {
        let found = try Self.lines(
            matching: /Setting\.|ProcessInfo\.processInfo\.environment/,
            in: ["PostgresClient", "S3Client", "APNSClient", "AppleIDClient", "DiaryModels", "DiaryCore", "DiaryHTTP", "DiaryServer"],
            except: ["DiaryServer/Configuration/"])
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }

    @Test("a test waits by observing: Task.sleep is called only in TestSupport/Waiting.swift, by waitUntil, withTimeLimit and pace")
    func noFixedSleepsInTests() throws {
        let targets = try FileManager.default.contentsOfDirectory(atPath: LayeringTests.tests.path)
        let found = try Self.lines(matching: /Task\.sleep\(/, in: targets, except: ["TestSupport/Waiting.swift"], under: LayeringTests.tests)
        #expect(!targets.isEmpty)
        #expect(found.isEmpty, "\(found.joined(separator: "\n"))")
    }
}
