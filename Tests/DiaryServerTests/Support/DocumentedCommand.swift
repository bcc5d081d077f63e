import Foundation
import TestSupport

/// A `sh` block of the README or docs/, with what the line before it says of it,
/// `<!-- doc-test: KIND -->`: DocumentedCommandTests runs it, or checks where it runs, or
/// holds it to a reason.
struct DocumentedCommand: CustomStringConvertible, Sendable {
    enum Kind: Equatable, Sendable {
        /// The README's tour: `api=` make run's address, then curl.
        case tour
        /// Run after the tour, with its `api`, and `AIKO` and `DIARY` its Aiko and her diary.
        case afterTour
        /// psql with SUPERUSER_URL and MIGRATION_DATABASE_URL, an empty database's.
        case migrations
        /// Run as written by these files: each command's program, or diary-server's
        /// subcommand, is named in one of them.
        case elsewhere([String])
        /// Not run, for this reason.
        case notRun(String)
    }

    var page: String
    /// The fence's line, from 1.
    var line: Int
    var kind: Kind
    var text: String

    var description: String { "\(page):\(line)" }

    /// The README's address for make run, which a run replaces with its server's.
    static let makeRunAddress = "api=http://127.0.0.1:8080\n"

    /// Every `sh` block, in page order; throws for one without a known marker.
    static func all() throws -> [DocumentedCommand] {
        let root = ScratchCluster.packageRoot
        let docs = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("docs").path)
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" }
        var blocks: [DocumentedCommand] = []
        for page in ["README.md"] + docs {
            let lines = try String(contentsOf: root.appendingPathComponent(page), encoding: .utf8).components(separatedBy: "\n")
            var index = 0
            while index < lines.count {
                defer { index += 1 }
                guard lines[index] == "```sh" else { continue }
                let marker = index > 0 ? lines[index - 1] : ""
                guard let end = lines[(index + 1)...].firstIndex(of: "```") else { throw HarnessError("\(page):\(index + 1): a block without its end") }
                guard let kind = kind(marker) else {
                    throw HarnessError("\(page):\(index + 1): the line before the block is not <!-- doc-test: tour | after the tour | migrations | elsewhere: FILE… | not run: WHY -->")
                }
                blocks.append(DocumentedCommand(page: page, line: index + 1, kind: kind, text: lines[(index + 1)..<end].joined(separator: "\n") + "\n"))
                index = end
            }
        }
        return blocks
    }

    private static func kind(_ marker: String) -> Kind? {
        guard let match = marker.wholeMatch(of: /<!-- doc-test: (.+) -->/) else { return nil }
        let said = String(match.1)
        switch said {
        case "tour": return .tour
        case "after the tour": return .afterTour
        case "migrations": return .migrations
        default:
            if said.hasPrefix("elsewhere: ") { return .elsewhere(said.dropFirst("elsewhere: ".count).split(separator: " ").map(String.init)) }
            if said.hasPrefix("not run: "), said.count > "not run: ".count + 10 { return .notRun(String(said.dropFirst("not run: ".count))) }
            return nil
        }
    }

    static func tour() throws -> DocumentedCommand {
        let tours = try all().filter { $0.kind == .tour }
        guard tours.count == 1, let tour = tours.first, tour.page == "README.md" else { throw HarnessError("the README has no one tour: \(tours)") }
        guard tour.text.contains(makeRunAddress) else { throw HarnessError("the tour no longer sets \(makeRunAddress) (make run's address)") }
        return tour
    }

    /// What each line runs: its program, or diary-server's subcommand, past any variables it sets.
    var commandWords: [String] {
        text.split(separator: "\n").compactMap { line -> String? in
            let words = line.split(separator: " ").map(String.init).drop { $0.contains("=") && !$0.hasPrefix("-") }
            guard let program = words.first, !program.hasPrefix("#") else { return nil }
            return program == "diary-server" ? words.dropFirst().first : program
        }
    }

    /// Runs `blocks` in one bash, `api` their server's address, in `directory`: curl fails on an
    /// error status, and so does the script. `NAME=…` in a block is `values[NAME]`: "…" is the
    /// reader's own value.
    static func run(
        _ blocks: [String], api: String, in directory: URL, values: [String: String] = [:], environment: [String: String] = [:]
    ) async throws -> (status: Int32, output: String) {
        var body = blocks.joined(separator: "\n").replacingOccurrences(of: makeRunAddress, with: "api=\(api)\n")
        for placeholder in body.matches(of: /\b([A-Z][A-Z0-9_]*)=…/) {
            guard let value = values[String(placeholder.1)] else { throw HarnessError("no value for \(placeholder.1)=…") }
            body = body.replacingOccurrences(of: "\(placeholder.1)=…", with: "\(placeholder.1)='\(value)'")
        }
        let script = """
            set -eo pipefail
            cd '\(directory.path)'
            api='\(api)'
            curl() { command curl --show-error --fail-with-body --max-time 30 "$@"; }
            \(body)
            """
        return try await Spawn.run("/bin/bash", ["-c", script], environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new })
    }
}
