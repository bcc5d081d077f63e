import Foundation
import Testing
import TestSupport

@testable import DiaryServer

/// The README is a door and docs/ the rooms: every link between them leads somewhere, and every
/// `make` target and `diary-server` command they name exists.
@Suite("README and docs/")
struct DocumentationTests {
    static let root = LayeringTests.sources.deletingLastPathComponent()

    /// README.md and every page of docs/, by path.
    static func pages() throws -> [(path: String, text: String)] { try ProjectDocuments.pages() }

    @Test("every relative link of the README and docs/ leads to a file that exists")
    func linksLead() throws {
        var broken: [String] = []
        var links = 0
        for page in try Self.pages() {
            let folder = (page.path as NSString).deletingLastPathComponent
            for match in page.text.matches(of: /\]\(([^)#:\s]+)(?:#[^)]*)?\)/) {
                links += 1
                let target = (folder as NSString).appendingPathComponent(String(match.1))
                if !FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(target).path) { broken.append("\(page.path): \(match.1)") }
            }
        }
        #expect(links >= 12, "the reader finds the map's links")
        #expect(broken.isEmpty, "\(broken)")
    }

    @Test("the README keeps the two set-up commands, the curl tour and the map, and stays short")
    func readmeIsADoor() throws {
        let readme = try #require(try Self.pages().first { $0.path == "README.md" }).text
        for heading in ["## Set-up: two commands", "## The core flow with curl", "## Map"] { #expect(readme.contains(heading)) }
        #expect(readme.contains("make run") && readme.contains("make test"))
        #expect(readme.split(separator: "\n", omittingEmptySubsequences: false).count < 200, "the rest goes in docs/")
    }

    @Test("every make target and diary-server command the README and docs/ name exists")
    func namedCommandsExist() throws {
        let makefile = try String(contentsOf: Self.root.appendingPathComponent("Makefile"), encoding: .utf8)
        // A rule of its own, or one of the benchmarks' one recipe.
        let benches = makefile.firstMatch(of: /(?m)^BENCHES := (.*)$/).map { $0.1.split(separator: " ").map(String.init) } ?? []
        let targets = Set(makefile.matches(of: /(?m)^([a-z][a-z0-9-]*):/).map { String($0.1) } + benches)
        let commands = Set(DiaryServerCommand.configuration.subcommands.map { $0._commandName })
        var missing: [String] = []
        for page in try Self.pages() {
            for match in page.text.matches(of: /`make ([a-z][a-z0-9-]*)/) where !targets.contains(String(match.1)) { missing.append("\(page.path): make \(match.1)") }
            for match in page.text.matches(of: /`diary-server ([a-z][a-z0-9-]*)/) where !commands.contains(String(match.1)) { missing.append("\(page.path): diary-server \(match.1)") }
        }
        #expect(targets.contains("test") && targets.contains("bench-realtime") && commands.contains("serve"), "the readers find the targets and commands")
        #expect(missing.isEmpty, "\(missing)")
    }
}
