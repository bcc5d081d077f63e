/// A SQL statement whose every interpolated value becomes a bind parameter.
///
/// `"select * from users where id = \(userID)"` is sent as `... where id = $1`
/// with `userID` bound separately, so a value can never change the statement.
/// SQL assembled at run time must be spelled `PostgresQuery(unsafeSQL:)` or
/// `\(unsafeRaw:)`, so that every such place is easy to find and review.
public struct PostgresQuery: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    public private(set) var sql: String
    public private(set) var bindings: PostgresBindings

    public init(stringLiteral value: StaticString) {
        self.sql = value.description
        self.bindings = PostgresBindings()
    }

    public init(stringInterpolation: StringInterpolation) {
        self.sql = stringInterpolation.sql
        self.bindings = stringInterpolation.bindings
    }

    /// SQL text that did not come from a literal. The caller vouches that it holds no user input.
    public init(unsafeSQL sql: String, bindings: PostgresBindings = PostgresBindings()) {
        self.sql = sql
        self.bindings = bindings
    }

    /// Whether the statement starts, ends or marks a transaction (or prepares one), judged
    /// by its first word. Such a statement must not share a connection: it would leave a
    /// transaction open around the pipelines queued behind it. Runs on every shared
    /// pipeline, so it reads bytes and builds nothing.
    var controlsTransaction: Bool { transactionControlWord != nil }

    /// Whether the statement is `BEGIN` or `START TRANSACTION`.
    var beginsTransaction: Bool { transactionControlWord.map { $0 < 2 } ?? false }

    /// The index in `transactionControlWords` of the statement's first word, if it is one.
    private var transactionControlWord: Int? {
        var sql = sql
        return sql.withUTF8 { bytes -> Int? in
            var index = 0
            func at(_ offset: Int) -> UInt8? { index + offset < bytes.count ? bytes[index + offset] : nil }
            while let byte = at(0) {
                if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r") || byte == UInt8(ascii: "(") {
                    index += 1
                } else if byte == UInt8(ascii: "-"), at(1) == UInt8(ascii: "-") {
                    while let next = at(0), next != UInt8(ascii: "\n") { index += 1 }
                } else if byte == UInt8(ascii: "/"), at(1) == UInt8(ascii: "*") {
                    index += 2
                    while at(0) != nil, !(at(0) == UInt8(ascii: "*") && at(1) == UInt8(ascii: "/")) { index += 1 }
                    // An unclosed comment is the server's to refuse; sharing it gains nothing.
                    guard at(0) != nil else { return Self.transactionControlWords.count - 1 }
                    index += 2
                } else {
                    break
                }
            }
            var end = index
            while end < bytes.count, bytes[end] | 0x20 >= UInt8(ascii: "a"), bytes[end] | 0x20 <= UInt8(ascii: "z") { end += 1 }
            let word = UnsafeBufferPointer(rebasing: bytes[index..<end])
            return Self.transactionControlWords.firstIndex { keyword in
                keyword.count == word.count && zip(keyword, word).allSatisfy { $0 == $1 | 0x20 }
            }
        }
    }

    /// The two that begin a transaction first (`beginsTransaction`).
    private static let transactionControlWords: [[UInt8]] = ["begin", "start", "commit", "end", "rollback", "abort", "savepoint", "release", "prepare"].map { Array($0.utf8) }

    /// Bind values are redacted: logs show the statement and how many values it carries, never the values.
    public var description: String {
        bindings.count == 0 ? sql : "\(sql) [\(bindings.count) bind(s) redacted]"
    }

    public struct StringInterpolation: StringInterpolationProtocol, Sendable {
        var sql: String
        var bindings: PostgresBindings

        public init(literalCapacity: Int, interpolationCount: Int) {
            sql = ""
            sql.reserveCapacity(literalCapacity + interpolationCount * 3)
            bindings = PostgresBindings(capacity: interpolationCount)
        }

        public mutating func appendLiteral(_ literal: StaticString) {
            sql += literal.description
        }

        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value) {
            bindings.append(value)
            sql += "$\(bindings.count)"
        }

        public mutating func appendInterpolation<Value: PostgresEncodable>(_ value: Value?) {
            bindings.append(value)
            sql += "$\(bindings.count)"
        }

        /// Splices a fragment written in source code, such as a policy's predicate.
        public mutating func appendInterpolation(_ fragment: PostgresFragment) {
            sql += fragment.sql
        }

        /// Splices a piece that carries values of its own, such as a policy rule about one
        /// diary: its `$n` are renumbered to follow the values bound before it.
        public mutating func appendInterpolation(_ piece: PostgresQuery) {
            sql += piece.sql.placeholdersShifted(by: bindings.count)
            bindings.append(contentsOf: piece.bindings)
        }

        /// Splices text into the statement itself. Never pass anything a user supplied.
        public mutating func appendInterpolation(unsafeRaw text: String) {
            sql += text
        }
    }
}

/// The values bound to a statement's `$n` parameters, in text format with their type OIDs.
public struct PostgresBindings: Sendable, Hashable, CustomStringConvertible {
    public private(set) var values: [String?]
    public private(set) var types: [PostgresDataType]

    public init(capacity: Int = 0) {
        values = []
        types = []
        values.reserveCapacity(capacity)
        types.reserveCapacity(capacity)
    }

    public var count: Int { values.count }

    public mutating func append<Value: PostgresEncodable>(_ value: Value) {
        values.append(value.postgresText)
        types.append(Value.postgresType)
    }

    public mutating func append<Value: PostgresEncodable>(_ value: Value?) {
        values.append(value?.postgresText)
        types.append(Value.postgresType)
    }

    public mutating func append(contentsOf other: PostgresBindings) {
        values.append(contentsOf: other.values)
        types.append(contentsOf: other.types)
    }

    public var description: String { "[\(count) bind(s) redacted]" }
}

extension String {
    /// `$1` becomes `$(1 + offset)`, and so on; quoted text, identifiers and `$$` stay as they are.
    /// Only ever applied to statements built by `PostgresQuery`, whose placeholders it wrote itself.
    ///
    /// Walks bytes, not Characters: every byte it acts on is ASCII, and it runs for every
    /// piece spliced into a statement, so grapheme breaking would be wasted work. Bytes
    /// past ASCII count as identifier characters, as in PostgreSQL's lexer.
    func placeholdersShifted(by offset: Int) -> String {
        guard offset > 0 else { return self }
        let dollar = UInt8(ascii: "$"), singleQuote = UInt8(ascii: "'"), doubleQuote = UInt8(ascii: "\"")
        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        func isWord(_ byte: UInt8) -> Bool {
            isDigit(byte) || byte == UInt8(ascii: "_") || byte >= 0x80
                || (byte | 0x20 >= UInt8(ascii: "a") && byte | 0x20 <= UInt8(ascii: "z"))
        }
        let source = Array(utf8)
        var result: [UInt8] = []
        result.reserveCapacity(source.count + 8)
        var quote: UInt8?
        var index = 0
        while index < source.count {
            let byte = source[index]
            if let open = quote {
                if byte == open { quote = nil }
            } else if byte == singleQuote || byte == doubleQuote {
                quote = byte
            } else if byte == dollar {
                var digitsEnd = index + 1
                var number = 0
                while digitsEnd < source.count, isDigit(source[digitsEnd]), number < Int.max / 100 {
                    number = number * 10 + Int(source[digitsEnd] - UInt8(ascii: "0"))
                    digitsEnd += 1
                }
                let precededByWord = index > 0 && isWord(source[index - 1])
                if digitsEnd > index + 1, !precededByWord {
                    result.append(dollar)
                    result.append(contentsOf: String(number + offset).utf8)
                    index = digitsEnd
                    continue
                }
            }
            result.append(byte)
            index += 1
        }
        return String(decoding: result, as: UTF8.self)
    }
}

/// A piece of SQL written as a literal in source code, never built at run time,
/// so it can be spliced into a statement without becoming a bind.
public struct PostgresFragment: Sendable, Hashable, ExpressibleByStringLiteral, CustomStringConvertible {
    public let sql: String

    public init(stringLiteral value: StaticString) {
        sql = value.description
    }

    private init(sql: String) {
        self.sql = sql
    }

    /// Both halves are literals, so the sum is one too.
    public static func + (lhs: PostgresFragment, rhs: PostgresFragment) -> PostgresFragment {
        PostgresFragment(sql: lhs.sql + rhs.sql)
    }

    public var description: String { sql }
}
