import Foundation

/// The reference for the duplicate-key scan: a plain recursive-descent walk of text that
/// JSONSerialization has accepted, which lists each object's keys as parsed (escapes
/// decoded) and reports the first key an object already had, in document order.
struct JSONKeyReference {
    private let bytes: [UInt8]
    private var index = 0
    private var repeated: String?

    static func firstRepeatedKey(in bytes: [UInt8]) -> String? {
        var walk = JSONKeyReference(bytes: bytes)
        walk.value()
        return walk.repeated
    }

    private init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    private mutating func value() {
        skipSpace()
        guard index < bytes.count else { return }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            var keys: Set<String> = []
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] != UInt8(ascii: "}") else { break }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                let key = string()
                if repeated == nil, !keys.insert(key).inserted { repeated = key }
                skipSpace()
                index += 1  // the colon
                value()
            }
            index += 1
        case UInt8(ascii: "["):
            index += 1
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] != UInt8(ascii: "]") else { break }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                value()
            }
            index += 1
        case UInt8(ascii: "\""):
            _ = string()
        default:
            // A number, true, false or null.
            while index < bytes.count, !Array(",]} \t\r\n".utf8).contains(bytes[index]) { index += 1 }
        }
    }

    /// The string that starts at `index`, decoded by JSONSerialization itself.
    private mutating func string() -> String {
        let start = index
        index += 1
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        index += 1
        let literal = Data(bytes[start..<min(index, bytes.count)])
        return (try? JSONSerialization.jsonObject(with: literal, options: .fragmentsAllowed)) as? String ?? ""
    }

    private mutating func skipSpace() {
        while index < bytes.count, Array(" \t\r\n".utf8).contains(bytes[index]) { index += 1 }
    }
}
