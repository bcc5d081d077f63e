import Foundation

extension MigrationFile {
    /// The file's statements, one by one, as psql would send them: split at each `;` that is
    /// not inside a string, a quoted name, a comment or a dollar-quoted body. On Citus a
    /// migration runs statement by statement, because Citus sends some DDL (DROP INDEX, ALTER
    /// TABLE … DROP COLUMN) on to the workers as the text of the whole query it came in,
    /// which the workers refuse when that text holds more than one command.
    var statements: [String] {
        let text = Array(sql.unicodeScalars)
        var statements: [String] = []
        var start = 0, index = 0
        func flush(through end: Int) {
            let statement = String(String.UnicodeScalarView(text[start..<end])).trimmingCharacters(in: .whitespacesAndNewlines)
            if !Self.isOnlyComments(statement) { statements.append(statement) }
            start = end
        }
        while index < text.count {
            let scalar = text[index]
            let next = index + 1 < text.count ? text[index + 1] : nil
            switch scalar {
            case "-" where next == "-":
                while index < text.count, text[index] != "\n" { index += 1 }
            case "/" where next == "*":
                index += 2
                while index + 1 < text.count, !(text[index] == "*" && text[index + 1] == "/") { index += 1 }
                index += 2
            case "'", "\"":
                index += 1
                while index < text.count {
                    if text[index] == scalar {
                        if index + 1 < text.count, text[index + 1] == scalar { index += 2; continue }
                        break
                    }
                    index += 1
                }
                index += 1
            case "$":
                var end = index + 1
                while end < text.count, text[end] == "_" || text[end].properties.isAlphabetic || (end > index + 1 && ("0"..."9").contains(text[end])) { end += 1 }
                guard end < text.count, text[end] == "$" else { index += 1; continue }
                let tag = Array(text[index...end])
                index = end + 1
                while index + tag.count <= text.count, Array(text[index..<index + tag.count]) != tag { index += 1 }
                index += tag.count
            case ";":
                index += 1
                flush(through: index)
            default:
                index += 1
            }
        }
        flush(through: text.count)
        return statements
    }

    /// `statement` from its first line that is not a `--` comment or blank: what a reader of
    /// the statement's kind looks at.
    static func command(of statement: String) -> Substring {
        var lines = statement.split(separator: "\n", omittingEmptySubsequences: false)[...]
        while let first = lines.first, first.trimmingCharacters(in: .whitespaces).isEmpty || first.trimmingCharacters(in: .whitespaces).hasPrefix("--") {
            lines = lines.dropFirst()
        }
        guard let start = lines.first?.startIndex else { return statement[statement.endIndex...] }
        return statement[start...]
    }

    private static func isOnlyComments(_ text: String) -> Bool {
        command(of: text).isEmpty
    }
}
