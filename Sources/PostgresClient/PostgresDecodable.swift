import Foundation

/// A Swift value that can be read from a column in PostgreSQL's text format.
public protocol PostgresDecodable {
    init(postgresText text: String) throws
    /// Called for SQL NULL. Only `Optional` accepts it.
    static func decodeNull() throws -> Self
}

extension PostgresDecodable {
    public static func decodeNull() throws -> Self {
        throw PostgresDecodingFailure.unexpectedNull
    }
}

/// Why a single value failed to decode; `PostgresDecodingError` adds the column.
public enum PostgresDecodingFailure: Error, Sendable, Equatable {
    case unexpectedNull
    case malformed(String)
}

extension Optional: PostgresDecodable where Wrapped: PostgresDecodable {
    public init(postgresText text: String) throws {
        self = .some(try Wrapped(postgresText: text))
    }

    public static func decodeNull() throws -> Self { .none }
}

extension String: PostgresDecodable {
    public init(postgresText text: String) throws { self = text }
}

extension Int: PostgresDecodable {
    public init(postgresText text: String) throws {
        guard let value = Int(text) else { throw PostgresDecodingFailure.malformed("not an integer") }
        self = value
    }
}

extension Int64: PostgresDecodable {
    public init(postgresText text: String) throws {
        guard let value = Int64(text) else { throw PostgresDecodingFailure.malformed("not an integer") }
        self = value
    }
}

extension Int32: PostgresDecodable {
    public init(postgresText text: String) throws {
        guard let value = Int32(text) else { throw PostgresDecodingFailure.malformed("not a 32-bit integer") }
        self = value
    }
}

extension Bool: PostgresDecodable {
    public init(postgresText text: String) throws {
        switch text {
        case "t": self = true
        case "f": self = false
        default: throw PostgresDecodingFailure.malformed("not a boolean")
        }
    }
}

extension Double: PostgresDecodable {
    public init(postgresText text: String) throws {
        guard let value = Double(text) else { throw PostgresDecodingFailure.malformed("not a number") }
        self = value
    }
}

extension UUID: PostgresDecodable {
    public init(postgresText text: String) throws {
        guard let value = UUID(uuidString: text) else { throw PostgresDecodingFailure.malformed("not a uuid") }
        self = value
    }
}

extension Date: PostgresDecodable {
    public init(postgresText text: String) throws {
        guard let value = PostgresTimestamp.parse(text) else {
            throw PostgresDecodingFailure.malformed("not a timestamptz in ISO style and UTC")
        }
        self = value
    }
}

extension Array: PostgresDecodable where Element: PostgresArrayElement {
    public init(postgresText text: String) throws {
        guard let elements = PostgresArrayLiteral.parse(text) else {
            throw PostgresDecodingFailure.malformed("not a one-dimensional array")
        }
        self = try elements.map { element in
            guard let element else { throw PostgresDecodingFailure.malformed("array holds a NULL element") }
            return try Element(postgresText: element)
        }
    }
}
