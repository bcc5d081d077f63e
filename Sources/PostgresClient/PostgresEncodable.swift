public import Foundation

/// A Swift value that can be bound to a statement parameter, in PostgreSQL's text format.
public protocol PostgresEncodable: Sendable {
    static var postgresType: PostgresDataType { get }
    var postgresText: String { get }
}

extension String: PostgresEncodable {
    public static var postgresType: PostgresDataType { .text }
    public var postgresText: String { self }
}

extension Int: PostgresEncodable {
    public static var postgresType: PostgresDataType { .int8 }
    public var postgresText: String { String(self) }
}

extension Int64: PostgresEncodable {
    public static var postgresType: PostgresDataType { .int8 }
    public var postgresText: String { String(self) }
}

extension Int32: PostgresEncodable {
    public static var postgresType: PostgresDataType { .int4 }
    public var postgresText: String { String(self) }
}

extension Bool: PostgresEncodable {
    public static var postgresType: PostgresDataType { .bool }
    public var postgresText: String { self ? "t" : "f" }
}

extension Double: PostgresEncodable {
    public static var postgresType: PostgresDataType { .float8 }
    public var postgresText: String {
        if isNaN { return "NaN" }
        if isInfinite { return self < 0 ? "-Infinity" : "Infinity" }
        return "\(self)"
    }
}

extension UUID: PostgresEncodable {
    public static var postgresType: PostgresDataType { .uuid }
    public var postgresText: String { canonicalText }
}

extension UUID {
    /// The lower-case 8-4-4-4-12 form, as PostgreSQL writes it. `uuidString` goes through
    /// sprintf on Linux, and a request binds several ids.
    public var canonicalText: String {
        String(unsafeUninitializedCapacity: Self.textLength) { writeText(into: $0, upperCase: false) }
    }

    /// Bytes in the 8-4-4-4-12 form.
    public static let textLength = 36

    /// Writes the 8-4-4-4-12 form into the first `textLength` bytes of `buffer`, in either
    /// case (JSONEncoder writes upper case, PostgreSQL lower case); returns `textLength`.
    @discardableResult
    public func writeText(into buffer: UnsafeMutableBufferPointer<UInt8>, upperCase: Bool) -> Int {
        precondition(buffer.count >= Self.textLength, "a uuid's text needs \(Self.textLength) bytes")
        let letterBase = upperCase ? UInt8(ascii: "A") : UInt8(ascii: "a")
        func digit(_ value: UInt8) -> UInt8 { value < 10 ? UInt8(ascii: "0") + value : letterBase + value - 10 }
        return withUnsafeBytes(of: uuid) { raw in
            var position = 0
            for (index, byte) in raw.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    buffer[position] = UInt8(ascii: "-")
                    position += 1
                }
                buffer[position] = digit(byte >> 4)
                buffer[position + 1] = digit(byte & 0xF)
                position += 2
            }
            return position
        }
    }
}

extension Date: PostgresEncodable {
    public static var postgresType: PostgresDataType { .timestamptz }
    public var postgresText: String { PostgresTimestamp.format(self) }
}

extension Data: PostgresEncodable {
    public static var postgresType: PostgresDataType { .bytea }
    public var postgresText: String {
        "\\x" + map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}

/// Elements that may appear in a one-dimensional PostgreSQL array.
public protocol PostgresArrayElement: PostgresEncodable, PostgresDecodable, PostgresArrayElementDecodable {
    static var postgresArrayType: PostgresDataType { get }
}

extension String: PostgresArrayElement {
    public static var postgresArrayType: PostgresDataType { .textArray }
}

extension UUID: PostgresArrayElement {
    public static var postgresArrayType: PostgresDataType { .uuidArray }
}

extension Date: PostgresArrayElement {
    public static var postgresArrayType: PostgresDataType { .timestamptzArray }
}

extension Array: PostgresEncodable where Element: PostgresArrayElement {
    public static var postgresType: PostgresDataType { Element.postgresArrayType }

    public var postgresText: String {
        PostgresArrayLiteral.format(map(\.postgresText))
    }
}

/// A Codable value stored as `jsonb`.
public struct PostgresJSON<Value: Codable & Sendable>: PostgresEncodable, PostgresDecodable, Sendable {
    public var value: Value

    public init(_ value: Value) { self.value = value }

    public static var postgresType: PostgresDataType { .jsonb }

    public var postgresText: String {
        // Encoding a Codable value into JSON fails only for non-finite floats; `null` keeps the bind well-formed.
        guard let data = try? PostgresJSONCoding.encoder.encode(value) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    public init(postgresText text: String) throws {
        var text = text
        self = try text.withUTF8(Self.init(postgresBytes:))
    }

    public init(postgresBytes bytes: UnsafeBufferPointer<UInt8>) throws {
        // Most aggregated lists (an entry's readers) are empty; that needs no JSON parser.
        // An empty array casts to any array type, and to nothing else.
        if bytes.count == 2, bytes[0] == UInt8(ascii: "["), bytes[1] == UInt8(ascii: "]"), let empty = [Any]() as? Value {
            value = empty
            return
        }
        do {
            value = try PostgresJSONCoding.decoder.decode(Value.self, from: Data(buffer: bytes))
        } catch {
            throw PostgresDecodingFailure.malformed("JSON does not decode as \(Value.self): \(error)")
        }
    }
}

/// JSON coders whose dates are RFC 3339 with microseconds, matching what SQL builds with
/// `to_json(timestamptz)` under the connection's UTC time zone.
public enum PostgresJSONCoding {
    /// Shared: JSONEncoder and JSONDecoder are safe to use from many tasks at once.
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(PostgresTimestamp.format(date))
        }
        return encoder
    }()

    public static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = PostgresTimestamp.jsonDecodingStrategy
        return decoder
    }()
}
