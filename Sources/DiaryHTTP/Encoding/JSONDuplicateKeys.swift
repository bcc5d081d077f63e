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
                index = endOfString(in: data, from: start)
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

    /// How many arrays and objects the deepest value sits in. Any bytes will do, valid JSON
    /// or not: the count is taken before the body is parsed, so that no parser recurses
    /// deeper than `APIRequestDecoder.maximumNesting`.
    static func nesting(of data: Data) -> Int {
        var depth = 0, deepest = 0
        var index = data.startIndex
        while index < data.endIndex {
            switch data[index] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                deepest = max(deepest, depth)
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth = max(0, depth - 1)
            case UInt8(ascii: "\""):
                index = endOfString(in: data, from: index)
            default:
                break
            }
            index += 1
        }
        return deepest
    }

    /// The index of the quote that closes the string opened at `start`, escapes skipped, or
    /// `data.endIndex` or past it when the text ends first.
    static func endOfString(in data: Data, from start: Data.Index) -> Data.Index {
        var index = start + 1
        while index < data.endIndex, data[index] != UInt8(ascii: "\"") {
            index += data[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        return index
    }
}
