import Foundation
import TestSupport

/// A block of shell commands (a fence of sh, bash, shell, zsh or console) of the README or
/// docs/, with what the line before it says of it,
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
        /// Run as written by these files: each of its `commandWords` is in one of them.
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

    /// Every block of commands, in page order; throws for one without a known marker, or one
    /// fenced otherwise than "```sh" at the line's start.
    static func all() throws -> [DocumentedCommand] {
        var blocks: [DocumentedCommand] = []
        for (page, text) in try ProjectDocuments.pages() {
            let lines = text.components(separatedBy: "\n")
            var index = 0
            while index < lines.count {
                defer { index += 1 }
                guard Self.isCommandFence(lines[index]) else { continue }
                guard lines[index] == "```sh" else { throw HarnessError("\(page):\(index + 1): a block of commands is fenced \"```sh\" at the line's start, so that it is found") }
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

    /// Any fence of a shell's commands, however indented.
    private static func isCommandFence(_ line: String) -> Bool {
        line.contains(/^\s*(?:```|~~~)\s*(?:sh|bash|shell|zsh|console)\b/)
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

    /// What the block's lines run, to be found in the files that run it as written: each
    /// line's program (diary-server's subcommand), the variables it sets, and its options,
    /// with their values where the block gives one (not a placeholder, `<node>`, `…`, a URL).
    var commandWords: [String] {
        text.split(separator: "\n").flatMap { line -> [String] in
            let words = line.split(separator: " ").map(String.init).prefix { !$0.hasPrefix("#") }
            let settings = words.prefix { $0.contains("=") && !$0.hasPrefix("-") }
            guard let program = words.dropFirst(settings.count).first else { return [] }
            let options = words.filter { $0.hasPrefix("--") }.map { option in
                option.wholeMatch(of: /--[\w-]+=[\w-]+/) != nil ? option : String(option.prefix { $0 != "=" })
            }
            let run = program == "diary-server" ? words.dropFirst(settings.count + 1).first ?? program : program
            return settings.map { String($0.prefix { $0 != "=" }) } + [run] + options
        }
    }

    /// Whether `text` holds `word` whole: not inside a longer name or option.
    static func holds(_ text: String, _ word: String) -> Bool {
        var rest = text[...]
        while let found = rest.range(of: word) {
            let before = found.lowerBound == text.startIndex ? nil : text[text.index(before: found.lowerBound)]
            let after = found.upperBound == text.endIndex ? nil : text[found.upperBound]
            let joins: (Character?) -> Bool = { $0.map { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" } ?? false }
            if !joins(before) && !joins(after) { return true }
            rest = text[found.upperBound...]
        }
        return false
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
