import Foundation

/// Finds a key repeated within one JSON object. JSONSerialization and JSONDecoder keep the
/// last of them silently, so `{"name": "a", "name": "b"}` would mean whatever the parser
/// happens to keep; the API refuses it instead. Runs on text already parsed as valid JSON.
enum JSONDuplicateKeys {
    /// The first repeated key, or nil.
    static func first(in data: Data) -> String? {
        var objects: [(keys: Set<String>, expectingKey: Bool)?] = []  // nil: an array
        var index = data.startIndex
        while index < data.endIndex {
            let byte = data[index]
            switch byte {
            case UInt8(ascii: "{"):
                objects.append((keys: [], expectingKey: true))
            case UInt8(ascii: "["):
                objects.append(nil)
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                _ = objects.popLast()
            case UInt8(ascii: ","):
                if let last = objects.last, var object = last {
                    object.expectingKey = true
                    objects[objects.count - 1] = object
                }
            case UInt8(ascii: "\""):
                let start = index
                index += 1
                while index < data.endIndex, data[index] != UInt8(ascii: "\"") {
                    index += data[index] == UInt8(ascii: "\\") ? 2 : 1
                }
                guard let last = objects.last, var object = last, object.expectingKey else { break }
                let literal = data[start...min(index, data.endIndex - 1)]
                let key = literal.contains(UInt8(ascii: "\\"))
                    ? (try? JSONSerialization.jsonObject(with: Data(literal), options: .fragmentsAllowed) as? String) ?? String(decoding: literal, as: UTF8.self)
                    : String(decoding: literal.dropFirst().dropLast(), as: UTF8.self)
                if !object.keys.insert(key).inserted { return key }
                object.expectingKey = false
                objects[objects.count - 1] = object
            default:
                break
            }
            index += 1
        }
        return nil
    }
}
