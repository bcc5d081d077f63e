public import Foundation

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

/// bytea in its text form, `\x` and two hex digits a byte (bytea_output = hex, the default).
extension Data: PostgresDecodable {
    public init(postgresText text: String) throws {
        var text = text
        self = try text.withUTF8 { try Data(postgresBytes: $0) }
    }

    public init(postgresBytes bytes: UnsafeBufferPointer<UInt8>) throws {
        guard bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x"), bytes.count % 2 == 0 else {
            throw PostgresDecodingFailure.malformed("not bytea in hex form")
        }
        func nibble(_ byte: UInt8) throws -> UInt8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
            default: throw PostgresDecodingFailure.malformed("not a hex digit in bytea")
            }
        }
        var data = Data(capacity: (bytes.count - 2) / 2)
        var index = 2
        while index < bytes.count {
            data.append(try nibble(bytes[index]) << 4 | nibble(bytes[index + 1]))
            index += 2
        }
        self = data
    }
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

    /// A timeline page reads about eighty of these, so the loop is flat: sixteen byte pairs
    /// at fixed offsets, any non-hex digit poisoning an accumulated flag instead of a branch each.
    static func parseCanonical(_ bytes: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard bytes.count == 36, let base = bytes.baseAddress,
              base[8] == UInt8(ascii: "-"), base[13] == UInt8(ascii: "-"), base[18] == UInt8(ascii: "-"), base[23] == UInt8(ascii: "-")
        else { return nil }
        var invalid: UInt8 = 0
        func pair(_ offset: Int) -> UInt8 {
            let high = hexValue(base[offset]), low = hexValue(base[offset + 1])
            invalid |= (high | low) & 0xF0
            return high << 4 | low
        }
        let uuid: uuid_t = (
            pair(0), pair(2), pair(4), pair(6), pair(9), pair(11), pair(14), pair(16),
            pair(19), pair(21), pair(24), pair(26), pair(28), pair(30), pair(32), pair(34)
        )
        return invalid == 0 ? UUID(uuid: uuid) : nil
    }

    /// The digit's value, or 0xFF for anything that is not a hex digit.
    @inline(__always)
    private static func hexValue(_ byte: UInt8) -> UInt8 {
        let digit = byte &- UInt8(ascii: "0")
        if digit < 10 { return digit }
        let letter = (byte | 0x20) &- UInt8(ascii: "a")
        return letter < 6 ? letter + 10 : 0xFF
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

extension Int: PostgresArrayElementDecodable {}

extension Optional: PostgresArrayElementDecodable where Wrapped: PostgresArrayElementDecodable {
    public init(postgresArrayElement bytes: UnsafeBufferPointer<UInt8>?) throws {
        self = try bytes.map { try Wrapped(postgresArrayElement: $0) }
    }
}

extension Array: PostgresDecodable where Element: PostgresArrayElementDecodable {
    public init(postgresText text: String) throws {
        var text = text
        self = try text.withUTF8 { try Self(postgresBytes: $0) }
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
