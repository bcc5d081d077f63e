import Foundation

/// A Swift value that can be read from a column in PostgreSQL's text format.
public protocol PostgresDecodable {
    init(postgresText text: String) throws
    /// Reads the value straight from libpq's buffer. Only types that can skip making a
    /// String first (uuids, timestamps, booleans) need their own.
    init(postgresBytes bytes: UnsafeBufferPointer<UInt8>) throws
    /// Called for SQL NULL. Only `Optional` accepts it.
    static func decodeNull() throws -> Self
}

extension PostgresDecodable {
    public init(postgresBytes bytes: UnsafeBufferPointer<UInt8>) throws {
        try self.init(postgresText: String(decoding: bytes, as: UTF8.self))
    }

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

    public init(postgresBytes bytes: UnsafeBufferPointer<UInt8>) throws {
        self = .some(try Wrapped(postgresBytes: bytes))
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

    public init(postgresBytes bytes: UnsafeBufferPointer<UInt8>) throws {
        guard bytes.count == 1 else { throw PostgresDecodingFailure.malformed("not a boolean") }
        switch bytes[0] {
        case UInt8(ascii: "t"): self = true
        case UInt8(ascii: "f"): self = false
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
    /// PostgreSQL always writes the canonical lower-case 8-4-4-4-12 form; reading it by
    /// hand avoids `UUID(uuidString:)`, which goes through sscanf on Linux.
    public init(postgresText text: String) throws {
        guard let value = UUID(canonicalText: text) else { throw PostgresDecodingFailure.malformed("not a uuid") }
        self = value
    }

    public init(postgresBytes bytes: UnsafeBufferPointer<UInt8>) throws {
        guard let value = UUID.parseCanonical(bytes) else { throw PostgresDecodingFailure.malformed("not a uuid") }
        self = value
    }

    /// The 8-4-4-4-12 form in either case, as `UUID(uuidString:)` accepts, without sscanf.
    public init?(canonicalText text: String) {
        var text = text
        guard let value = text.withUTF8(UUID.parseCanonical) else { return nil }
        self = value
    }

    static func parseCanonical(_ bytes: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard bytes.count == 36 else { return nil }
        var raw: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var index = 0
        let ok = withUnsafeMutableBytes(of: &raw) { output -> Bool in
            for byte in 0..<16 {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard bytes[index] == UInt8(ascii: "-") else { return false }
                    index += 1
                }
                guard let high = hexValue(bytes[index]), let low = hexValue(bytes[index + 1]) else { return false }
                output[byte] = high << 4 | low
                index += 2
            }
            return true
        }
        return ok ? UUID(uuid: raw) : nil
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension Date: PostgresDecodable {
    public init(postgresText text: String) throws {
        var text = text
        self = try text.withUTF8(Date.init(postgresBytes:))
    }

    public init(postgresBytes bytes: UnsafeBufferPointer<UInt8>) throws {
        guard let value = PostgresTimestamp.parse(bytes: bytes) else {
            throw PostgresDecodingFailure.malformed("not a timestamptz in ISO style and UTC")
        }
        self = value
    }
}

/// What a one-dimensional array's element decodes as: a value, or, for `Optional`, a
/// value or NULL. Any other element type refuses NULL.
public protocol PostgresArrayElementDecodable {
    init(postgresArrayElement bytes: UnsafeBufferPointer<UInt8>?) throws
}

extension PostgresArrayElementDecodable where Self: PostgresDecodable {
    public init(postgresArrayElement bytes: UnsafeBufferPointer<UInt8>?) throws {
        guard let bytes else { throw PostgresDecodingFailure.malformed("array holds a NULL element") }
        try self.init(postgresBytes: bytes)
    }
}

extension Optional: PostgresArrayElementDecodable where Wrapped: PostgresArrayElementDecodable {
    public init(postgresArrayElement bytes: UnsafeBufferPointer<UInt8>?) throws {
        self = try bytes.map { try Wrapped(postgresArrayElement: $0) }
    }
}

extension Array: PostgresDecodable where Element: PostgresArrayElementDecodable {
    public init(postgresText text: String) throws {
        var text = text
        self = try text.withUTF8(Self.init(postgresBytes:))
    }

    public init(postgresBytes bytes: UnsafeBufferPointer<UInt8>) throws {
        var elements: [Element] = []
        let wellFormed = try PostgresArrayLiteral.forEachElement(in: bytes) { element in
            elements.append(try Element(postgresArrayElement: element))
        }
        guard wellFormed else { throw PostgresDecodingFailure.malformed("not a one-dimensional array") }
        self = elements
    }
}
