import Foundation
import Testing
@testable import DiaryServer

/// The settings as they are read (DiaryServer/Configuration), as `serve --help` lists them and
/// as docs/operations.md's table does: a variable added to one and not the others fails here.
@Suite("Settings, read and documented alike")
struct SettingsTableTests {
    /// Read by other commands alone, so not in `serve --help`.
    static let notServes: Set<String> = ["DIARY_MIGRATIONS_DIR"]

    /// Every environment variable the Configuration folder names.
    static func variablesRead() throws -> Set<String> {
        let folder = LayeringTests.sources.appendingPathComponent("DiaryServer")
        var names: Set<String> = []
        for file in LayeringTests.swiftFiles(of: "DiaryServer") where file.hasPrefix("Configuration/") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: /"([A-Z][A-Z0-9_]{2,})"/) { names.insert(String(match.1)) }
        }
        names.remove("PATH")
        return names
    }

    @Test("serve --help and docs/operations.md's settings table name every variable that is read")
    func documented() throws {
        let read = try Self.variablesRead()
        #expect(read.count > 40, "the settings were not found: \(read.count)")
        let help = DiaryServerCommand.helpMessage(for: ServeCommand.self, columns: 10_000)
        let readme = try String(contentsOf: LayeringTests.sources.deletingLastPathComponent().appendingPathComponent("docs/operations.md"), encoding: .utf8)
        for name in read.sorted() {
            #expect(Self.notServes.contains(name) || help.contains(name), "serve --help does not list \(name)")
            #expect(readme.contains("`\(name)`"), "docs/operations.md does not list \(name)")
        }
    }
}
