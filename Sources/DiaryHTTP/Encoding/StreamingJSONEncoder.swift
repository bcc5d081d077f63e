import Foundation
import PostgresClient

/// Writes an `Encodable` value straight into JSON bytes, in one pass.
///
/// Foundation's JSONEncoder first builds a tree of every value (with sorted keys, a
/// dictionary per object), then serialises it; every response pays for that tree. This
/// writes keys in declaration order as the synthesised `encode(to:)` calls arrive. What it
/// writes parses to the same JSON as JSONEncoder with `PostgresJSONCoding`'s settings
/// (timestamps as RFC 3339 text, nil optionals left out), which `StreamingJSONEncoderTests`
/// checks for every response type.
struct StreamingJSONEncoder {
    func encode(_ value: some Encodable) throws -> [UInt8] {
        let output = JSONOutput()
        output.bytes.reserveCapacity(1024)
        if let writable = value as? any JSONWritable {
            writable.writeJSON(to: output)
        } else {
            try output.write(value)
        }
        return output.bytes
    }
}

/// The bytes written so far, shared by every container of one encoding.
final class JSONOutput {
    /// One encoding writes it, on one thread, and no access overlaps another, so the runtime's
    /// exclusivity check, which would run on every append, is turned off.
    @exclusivity(unchecked) var bytes: [UInt8] = []

    func write(_ value: some Encodable) throws {
        switch value {
        case let date as Date: writeDate(date)
        case let uuid as UUID: writeUUID(uuid)
        case let string as String: writeString(string)
        default:
            let encoder = ValueEncoder(output: self)
            try value.encode(to: encoder)
            encoder.close()
        }
    }

    /// Text that needs no escaping, the usual case, goes in with one append instead of
    /// one per byte.
    func writeString(_ string: String) {
        let utf8 = string.utf8
        if !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            bytes.append(UInt8(ascii: "\""))
            bytes.append(contentsOf: utf8)
            bytes.append(UInt8(ascii: "\""))
            return
        }
        var escaped: [UInt8] = [UInt8(ascii: "\"")]
        escaped.reserveCapacity(utf8.count + 16)
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\""): escaped.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): escaped.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): escaped.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): escaped.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): escaped.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                escaped.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                            Self.hexDigits[Int(byte >> 4)], Self.hexDigits[Int(byte & 0xF)]])
            default: escaped.append(byte)
            }
        }
        escaped.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: escaped)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// As `uuidString` spells it (upper case, as JSONEncoder writes a UUID), without the String.
    func writeUUID(_ uuid: UUID) {
        bytes.append(UInt8(ascii: "\""))
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: UUID.textLength))
        _ = bytes.withUnsafeMutableBufferPointer { all in
            uuid.writeText(into: UnsafeMutableBufferPointer(rebasing: all[start...]), upperCase: true)
        }
        bytes.append(UInt8(ascii: "\""))
    }

    func writeDate(_ date: Date) {
        bytes.append(UInt8(ascii: "\""))
        PostgresTimestamp.write(date, into: &bytes)
        bytes.append(UInt8(ascii: "\""))
    }

    func writeRaw(_ text: String) { bytes.append(contentsOf: text.utf8) }

    func writeDouble(_ value: Double) throws {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: [], debugDescription: "\(value) is not valid JSON"))
        }
        writeRaw(value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)")
    }
}

/// The encoder of one value. Containers carry no end-of-value signal, so the value's
/// closing bracket is written by `close()` once its `encode(to:)` has returned, and a
/// nested container is closed before its parent writes anything after it.
private final class ValueEncoder: Encoder {
    enum Shape { case none, keyed, unkeyed, single }

    let output: JSONOutput
    var shape = Shape.none
    var count = 0
    var openChild: ValueEncoder?

    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(output: JSONOutput) { self.output = output }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        if shape == .none {
            shape = .keyed
            output.bytes.append(UInt8(ascii: "{"))
        }
        return KeyedEncodingContainer(KeyedContainer<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        if shape == .none {
            shape = .unkeyed
            output.bytes.append(UInt8(ascii: "["))
        }
        return UnkeyedContainer(encoder: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        shape = .single
        return SingleContainer(encoder: self)
    }

    /// Starts the next member: closes a nested container left open, writes the comma and key.
    func beginElement(key: String?) {
        if let child = openChild {
            child.close()
            openChild = nil
        }
        if count > 0 { output.bytes.append(UInt8(ascii: ",")) }
        count += 1
        if let key {
            output.writeString(key)
            output.bytes.append(UInt8(ascii: ":"))
        }
    }

    func nested() -> ValueEncoder {
        let child = ValueEncoder(output: output)
        openChild = child
        return child
    }

    func close() {
        openChild?.close()
        openChild = nil
        switch shape {
        case .none: output.writeRaw("{}")
        case .keyed: output.bytes.append(UInt8(ascii: "}"))
        case .unkeyed: output.bytes.append(UInt8(ascii: "]"))
        case .single: break
        }
    }
}

// Keyed and unkeyed containers write a member's key or comma, then the value as a single
// value: how each primitive is written lives in `SingleContainer` alone. Every primitive
// has its own overload there, so none falls back to `encode<T>`, which would recurse.

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let encoder: ValueEncoder
    var codingPath: [any CodingKey] { [] }

    private func member(_ key: Key) -> SingleContainer {
        encoder.beginElement(key: key.stringValue)
        return SingleContainer(encoder: encoder)
    }

    func encodeNil(forKey key: Key) throws { member(key).encodeNil() }
    func encode(_ value: Bool, forKey key: Key) throws { member(key).encode(value) }
    func encode(_ value: String, forKey key: Key) throws { member(key).encode(value) }
    func encode(_ value: Int, forKey key: Key) throws { member(key).encode(value) }
    func encode(_ value: Int8, forKey key: Key) throws { member(key).encode(value) }
    func encode(_ value: Int16, forKey key: Key) throws { member(key).encode(value) }
    func encode(_ value: Int32, forKey key: Key) throws { member(key).encode(value) }
    func encode(_ value: Int64, forKey key: Key) throws { member(key).encode(value) }
    func encode(_ value: UInt, forKey key: Key) throws { member(key).encode(value) }
    func encode(_ value: UInt8, forKey key: Key) throws { member(key).encode(value) }
    func encode(_ value: UInt16, forKey key: Key) throws { member(key).encode(value) }
    func encode(_ value: UInt32, forKey key: Key) throws { member(key).encode(value) }
    func encode(_ value: UInt64, forKey key: Key) throws { member(key).encode(value) }
    func encode(_ value: Double, forKey key: Key) throws { try member(key).encode(value) }
    func encode(_ value: Float, forKey key: Key) throws { try member(key).encode(value) }
    func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try member(key).encode(value) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        superEncoder(forKey: key).container(keyedBy: keyType)
    }

    func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        superEncoder(forKey: key).unkeyedContainer()
    }

    func superEncoder() -> any Encoder {
        encoder.beginElement(key: "super")
        return encoder.nested()
    }

    func superEncoder(forKey key: Key) -> any Encoder {
        encoder.beginElement(key: key.stringValue)
        return encoder.nested()
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let encoder: ValueEncoder
    var codingPath: [any CodingKey] { [] }
    var count: Int { encoder.count }

    private func element() -> SingleContainer {
        encoder.beginElement(key: nil)
        return SingleContainer(encoder: encoder)
    }

    func encodeNil() throws { element().encodeNil() }
    func encode(_ value: Bool) throws { element().encode(value) }
    func encode(_ value: String) throws { element().encode(value) }
    func encode(_ value: Int) throws { element().encode(value) }
    func encode(_ value: Int8) throws { element().encode(value) }
    func encode(_ value: Int16) throws { element().encode(value) }
    func encode(_ value: Int32) throws { element().encode(value) }
    func encode(_ value: Int64) throws { element().encode(value) }
    func encode(_ value: UInt) throws { element().encode(value) }
    func encode(_ value: UInt8) throws { element().encode(value) }
    func encode(_ value: UInt16) throws { element().encode(value) }
    func encode(_ value: UInt32) throws { element().encode(value) }
    func encode(_ value: UInt64) throws { element().encode(value) }
    func encode(_ value: Double) throws { try element().encode(value) }
    func encode(_ value: Float) throws { try element().encode(value) }
    func encode<T: Encodable>(_ value: T) throws { try element().encode(value) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        superEncoder().container(keyedBy: keyType)
    }

    func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        superEncoder().unkeyedContainer()
    }

    func superEncoder() -> any Encoder {
        encoder.beginElement(key: nil)
        return encoder.nested()
    }
}

private struct SingleContainer: SingleValueEncodingContainer {
    let encoder: ValueEncoder
    var codingPath: [any CodingKey] { [] }

    func encodeNil() { encoder.output.writeRaw("null") }
    func encode(_ value: Bool) { encoder.output.writeRaw(value ? "true" : "false") }
    func encode(_ value: String) { encoder.output.writeString(value) }
    func encode(_ value: Double) throws { try encoder.output.writeDouble(value) }
    func encode(_ value: Float) throws { try encoder.output.writeDouble(Double(value)) }
    func encode(_ value: Int) { encoder.output.writeRaw(String(value)) }
    func encode(_ value: Int8) { encoder.output.writeRaw(String(value)) }
    func encode(_ value: Int16) { encoder.output.writeRaw(String(value)) }
    func encode(_ value: Int32) { encoder.output.writeRaw(String(value)) }
    func encode(_ value: Int64) { encoder.output.writeRaw(String(value)) }
    func encode(_ value: UInt) { encoder.output.writeRaw(String(value)) }
    func encode(_ value: UInt8) { encoder.output.writeRaw(String(value)) }
    func encode(_ value: UInt16) { encoder.output.writeRaw(String(value)) }
    func encode(_ value: UInt32) { encoder.output.writeRaw(String(value)) }
    func encode(_ value: UInt64) { encoder.output.writeRaw(String(value)) }
    func encode<T: Encodable>(_ value: T) throws { try encoder.output.write(value) }
}
