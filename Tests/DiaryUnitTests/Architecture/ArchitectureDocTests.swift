import Foundation
import Testing

/// docs/ARCHITECTURE.md is read as a map of the code, so what it names must be there: each
/// type, file, folder and SQL function it puts in backticks is looked up in the sources and in
/// sql/, and a name that was renamed, moved or deleted fails here rather than misleading the
/// next reader. Its prose gives no counts ("two places"): a count goes stale without a name
/// changing. File reads only, no database.
@Suite("docs/ARCHITECTURE.md names what exists")
struct ArchitectureDocTests {
    static let root = LayeringTests.sources.deletingLastPathComponent()

    /// The repository read once for the suite: its tests only look names up in it.
    static let scanned = Result { try Repository.scan(root: ArchitectureDocTests.root) }

    static func document() throws -> String {
        try String(contentsOf: root.appendingPathComponent("docs/ARCHITECTURE.md"), encoding: .utf8)
    }

    /// The text of each code span, in order. A span may run across a line break, as in Markdown.
    static func codeSpans(in text: String) -> [String] {
        text.matches(of: #/`([^`]+)`/#).map { String($0.1) }
    }

    @Test("every type, file, folder and SQL function the page names exists")
    func namesExist() throws {
        let repository = try Self.scanned.get()
        let document = try Self.document()
        #expect(document.filter { $0 == "`" }.count.isMultiple(of: 2), "an unpaired backtick pairs every later span wrongly")
        let spans = Self.codeSpans(in: document)
        #expect(spans.count > 100, "the page's names were not found: \(spans.count)")
        let problems = spans.compactMap { repository.problem(with: $0) }
        #expect(problems.isEmpty, "docs/ARCHITECTURE.md names what is not there:\n\(problems.joined(separator: "\n"))")
    }

    /// The lookup can fail: a made-up name of each kind is reported, and real ones are not.
    @Test("a name that does not exist is reported")
    func madeUpNamesAreReported() throws {
        let repository = try Self.scanned.get()
        let madeUp = [
            "NoSuchTypeAnywhere", "PolicyTwin.noSuchMember", "PostgresQuery(noSuchLabel:)", "noSuchFunctionAnywhere",
            "no_such_function()", "no_such_table_anywhere", "NoSuchFile.swift", "DiaryCore/NoSuchFolder/", "NO_SUCH_VARIABLE=1",
        ]
        for name in madeUp {
            #expect(repository.problem(with: name) != nil, "\(name) is not reported")
        }
        let real = [
            "PolicyTwin", "PolicyTwin.requireDone", "RequestScope.Database.citus", "PostgresQuery(unsafeSQL:)", "runWorkerLoops",
            "post_entry", "user_plan()", "entries_timeline", "App+build.swift", "Errors/ProblemMapping.swift", "sql/schema.sql", "DB_CITUS=1",
        ]
        for name in real {
            #expect(repository.problem(with: name) == nil, "\(name) is reported: \(repository.problem(with: name) ?? "")")
        }
        let spans = Self.codeSpans(in: "a `NoSuchTypeAnywhere` and `PolicyTwin`")
        #expect(spans.compactMap { repository.problem(with: $0) }.count == 1)
    }

    /// Number words before what the page lists, such as "the differences live in two places".
    static func counts(in text: String) -> [String] {
        let count = /\b(two|three|four|five|six|seven|eight|nine|ten|several)\s+(places|files|folders|twins|stores|targets|services|workers|layers|pools)\b/
        return text.matches(of: count.ignoresCase()).map { String($0.0) }
    }

    @Test("the page spells out no counts of places, files or twins")
    func noCounts() throws {
        let found = Self.counts(in: try Self.document())
        #expect(found.isEmpty, "docs/ARCHITECTURE.md counts what it should name: \(found)")
        #expect(Self.counts(in: "The differences live in Two places.") == ["Two places"])
    }

    @Test("a request's walk names each middleware that App+build.swift adds, in the order it runs")
    func walkNamesTheMiddleware() throws {
        let build = try String(contentsOf: LayeringTests.sources.appendingPathComponent("DiaryHTTP/Application/App+build.swift"), encoding: .utf8)
        let router = try #require(build.range(of: "func buildRouter(")).lowerBound
        let body = String(build[router...])
        var added: [String] = []
        for match in body.matches(of: #/(?:middlewares\.add\(|add\(middleware: )(\w+)/#) {
            let name = String(match.1)
            guard name.first?.isLowercase == true else {
                added.append(name)
                continue
            }
            // Added by its variable: the type is the one it was made from.
            let made = try #require(body.range(of: "let \(name) = "), "\(name) is added but never made")
            added.append(String(body[made.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" }))
        }
        #expect(added.count > 5, "the middleware was not found in App+build.swift: \(added)")
        let document = try Self.document()
        let start = try #require(document.range(of: "## A request's walk")).upperBound
        let rest = document[start...]
        let section = rest.range(of: "\n## ").map { rest[..<$0.lowerBound] } ?? rest
        var previous = section.startIndex
        for name in added {
            guard let found = section.range(of: name) else {
                Issue.record("A request's walk does not name \(name), which App+build.swift adds")
                continue
            }
            #expect(found.lowerBound >= previous, "A request's walk names \(name) before what runs ahead of it")
            previous = found.lowerBound
        }
    }

    /// What names resolve against: files and folders, Swift declarations and SQL definitions.
    struct Repository: Sendable {
        /// Every file and folder under Sources/, Tests/ and Fuzz/, relative to the root.
        var paths: [String] = []
        /// Names after struct, class, enum, actor, protocol, typealias or extension.
        var types: Set<String> = []
        /// Names after func, var, let or case.
        var members: Set<String> = []
        /// The first label of each `init(`.
        var initLabels: Set<String> = []
        /// The string literals of Package.swift: its targets and language features.
        var packageNames: Set<String> = []
        /// What sql/definitions and sql/migrations create: functions, views, tables, indexes,
        /// triggers, policies, types.
        var sqlObjects: Set<String> = []
        var sqlFunctions: Set<String> = []
        /// Every word of sql/, Sources/ and Package.swift: columns, settings, variables.
        var words: Set<String> = []
        /// sql/ and Sources/ as text, for dotted names such as a setting.
        var text = ""

        static let codeFolders = ["Sources", "Tests", "Fuzz"]
        static let typeKeywords: Set<String> = ["struct", "class", "enum", "actor", "protocol", "typealias", "extension"]
        static let memberKeywords: Set<String> = ["func", "var", "let", "case"]
        /// Names from the standard library and dependencies that the page uses beside ours.
        static let external: Set<String> = ["Task", "TimeAmount", "ChildRequestContext"]

        static func scan(root: URL) throws -> Repository {
            var repository = Repository()
            var texts: [String] = []
            for folder in codeFolders {
                let base = root.appendingPathComponent(folder)
                repository.paths.append(folder)
                let listed = FileManager.default.enumerator(atPath: base.path)?.compactMap { $0 as? String } ?? []
                for path in listed {
                    repository.paths.append("\(folder)/\(path)")
                    guard path.hasSuffix(".swift") else { continue }
                    let bytes = try [UInt8](Data(contentsOf: base.appendingPathComponent(path)))
                    let tokens = Token.tokens(of: bytes, lineComment: "//")
                    repository.declare(tokens)
                    if folder == "Sources" {
                        repository.words.formUnion(tokens.compactMap(\.word))
                        texts.append(String(decoding: bytes, as: UTF8.self))
                    }
                }
            }
            let package = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
            repository.words.formUnion(Token.tokens(of: Array(package.utf8), lineComment: "//").compactMap(\.word))
            repository.packageNames = Set(package.matches(of: /"([A-Za-z_][A-Za-z0-9_]*)"/).map { String($0.1) })
            let sql = root.appendingPathComponent("sql")
            for folder in ["definitions", "migrations"] {
                let names = try FileManager.default.contentsOfDirectory(atPath: sql.appendingPathComponent(folder).path)
                for name in names.sorted() where name.hasSuffix(".sql") {
                    let bytes = try [UInt8](Data(contentsOf: sql.appendingPathComponent("\(folder)/\(name)")))
                    let tokens = Token.tokens(of: bytes, lineComment: "--")
                    repository.define(tokens)
                    repository.words.formUnion(tokens.compactMap(\.word))
                    texts.append(String(decoding: bytes, as: UTF8.self))
                }
            }
            repository.text = texts.joined(separator: "\n")
            return repository
        }

        /// Swift declarations: the word after a keyword, and the dotted names after a type's.
        mutating func declare(_ tokens: [Token]) {
            for (index, token) in tokens.enumerated().dropLast() {
                guard let keyword = token.word else { continue }
                guard let name = tokens[index + 1].word else {
                    if keyword == "init", tokens[index + 1] == .mark(UInt8(ascii: "(")), index + 2 < tokens.count, let label = tokens[index + 2].word {
                        initLabels.insert(label)
                    }
                    continue
                }
                if Self.typeKeywords.contains(keyword) {
                    types.insert(name)
                    var next = index + 2
                    while next + 1 < tokens.count, tokens[next] == .mark(UInt8(ascii: ".")), let nested = tokens[next + 1].word {
                        types.insert(nested)
                        next += 2
                    }
                } else if Self.memberKeywords.contains(keyword) {
                    members.insert(name)
                }
            }
        }

        /// SQL definitions: `create [or replace] [unique] <kind> [if not exists] [schema.]<name>`.
        mutating func define(_ tokens: [Token]) {
            let lowered = tokens.map { $0.word?.lowercased() }
            for index in lowered.indices where lowered[index] == "create" {
                var next = index + 1
                while next < lowered.count, let word = lowered[next], ["or", "replace", "unique", "materialized", "temporary", "temp"].contains(word) { next += 1 }
                guard next < lowered.count, let kind = lowered[next] else { continue }
                next += 1
                while next < lowered.count, let word = lowered[next], ["if", "not", "exists", "concurrently"].contains(word) { next += 1 }
                guard next < lowered.count, var name = lowered[next] else { continue }
                if next + 2 < lowered.count, tokens[next + 1] == .mark(UInt8(ascii: ".")), let qualified = lowered[next + 2] { name = qualified }
                sqlObjects.insert(name)
                if kind == "function" { sqlFunctions.insert(name) }
            }
        }

        /// Why `span` names nothing that exists, or nil when it does or is not a name to look up
        /// (a command line, a URL path, a placeholder such as `<Feature>`, a plain word).
        func problem(with span: String) -> String? {
            guard let first = span.first, !span.contains(where: \.isWhitespace), !span.contains("<"), !"/\\@".contains(first) else { return nil }
            if first == "+" {
                return paths.contains { $0.hasSuffix("\(span).swift") } ? nil : "`\(span)`: no file ends in \(span).swift"
            }
            if let variable = span.wholeMatch(of: /([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?:=.*)?/) {
                return words.contains(String(variable.1)) ? nil : "`\(span)`: \(variable.1) is read nowhere"
            }
            if span.contains("/") || span.hasSuffix(".swift") || span.hasSuffix(".sql") || span.hasSuffix(".md") || span.wholeMatch(of: /\w+\+\w+/) != nil {
                return pathExists(span) ? nil : "`\(span)`: no such file or folder"
            }
            guard let parsed = span.wholeMatch(of: /([A-Za-z_][A-Za-z0-9_.]*)(\((.*)\))?/) else { return nil }
            let base = String(parsed.1)
            let arguments = parsed.3.map(String.init)
            let parts = base.split(separator: ".").map(String.init)
            guard let head = parts.first, let initial = head.first else { return nil }
            if initial.isUppercase {
                if Self.external.contains(head) { return nil }
                guard types.contains(head) || packageNames.contains(head) else { return "`\(span)`: \(head) is declared nowhere" }
                if let missing = parts.dropFirst().first(where: { !types.contains($0) && !members.contains($0) }) {
                    return "`\(span)`: \(missing) is declared nowhere"
                }
                if parts.count == 1, let arguments, let label = arguments.firstMatch(of: /^(\w+):/), !initLabels.contains(String(label.1)) {
                    return "`\(span)`: \(head) has no init(\(label.1):)"
                }
                return nil
            }
            if parts.count > 1 {
                return text.contains(base) ? nil : "`\(span)`: \(base) appears in neither sql/ nor Sources/"
            }
            if base.contains("_"), base == base.lowercased(), base.contains(where: \.isLetter) {
                if arguments != nil {
                    return sqlFunctions.contains(base) ? nil : "`\(span)`: no SQL function \(base) in sql/definitions or sql/migrations"
                }
                return sqlObjects.contains(base) || words.contains(base) ? nil : "`\(span)`: \(base) appears in neither sql/ nor Sources/"
            }
            if base.contains(where: \.isUppercase) {
                return members.contains(base) ? nil : "`\(span)`: \(base) is declared nowhere"
            }
            if arguments != nil, !sqlFunctions.contains(base), !members.contains(base) {
                return "`\(span)`: \(base) is neither a SQL function nor a Swift func"
            }
            return nil
        }

        /// A path from the root, or the end of one under Sources/, Tests/ or Fuzz/; a file may
        /// be named without its `.swift`.
        func pathExists(_ span: String) -> Bool {
            let path = span.hasSuffix("/") ? String(span.dropLast()) : span
            let candidates = path.hasSuffix(".swift") ? [path] : [path, "\(path).swift"]
            return candidates.contains { candidate in
                FileManager.default.fileExists(atPath: ArchitectureDocTests.root.appendingPathComponent(candidate).path)
                    || paths.contains { $0 == candidate || $0.hasSuffix("/\(candidate)") }
            }
        }
    }

    /// A word (an identifier) or one other character of source text; spaces and comments are dropped.
    enum Token: Equatable, Sendable {
        case word(String)
        case mark(UInt8)

        var word: String? {
            switch self {
            case .word(let word): word
            case .mark: nil
            }
        }

        static func isWordStart(_ byte: UInt8) -> Bool {
            (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || byte == UInt8(ascii: "_")
        }

        static func isWordByte(_ byte: UInt8) -> Bool {
            isWordStart(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
        }

        /// Block comments are kept: "/*" in a string literal would otherwise hide the rest of a file.
        static func tokens(of bytes: [UInt8], lineComment: String) -> [Token] {
            let comment = Array(lineComment.utf8)
            var tokens: [Token] = []
            var index = 0
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "\n") {
                    index += 1
                } else if index + 1 < bytes.count, byte == comment[0], bytes[index + 1] == comment[1] {
                    while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { index += 1 }
                } else if isWordStart(byte) {
                    let start = index
                    while index < bytes.count, isWordByte(bytes[index]) { index += 1 }
                    tokens.append(.word(String(decoding: bytes[start..<index], as: UTF8.self)))
                } else {
                    tokens.append(.mark(byte))
                    index += 1
                }
            }
            return tokens
        }
    }
}
