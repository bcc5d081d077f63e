/// Reads and writes one-dimensional array literals such as `{a,"b c",NULL}`.
enum PostgresArrayLiteral {
    static func format(_ elements: [String]) -> String {
        var text = "{"
        for (index, element) in elements.enumerated() {
            if index > 0 { text += "," }
            text += "\""
            for character in element {
                if character == "\"" || character == "\\" { text += "\\" }
                text.append(character)
            }
            text += "\""
        }
        return text + "}"
    }

    /// Calls `body` with each element's bytes, unescaped (nil for NULL), straight from
    /// libpq's buffer where no escape needs undoing: a timeline page decodes some hundred
    /// uuids and timestamps this way, with no String per element. False for anything but
    /// a one-dimensional literal; `body` may have seen the elements before the fault.
    static func forEachElement(in bytes: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<UInt8>?) throws -> Void) rethrows -> Bool {
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\"), comma = UInt8(ascii: ",")
        let open = UInt8(ascii: "{"), close = UInt8(ascii: "}")
        guard bytes.count >= 2, bytes[0] == open, bytes[bytes.count - 1] == close else { return false }
        let end = bytes.count - 1
        if end == 1 { return true }
        var index = 1
        var unescaped: [UInt8] = []
        while true {
            if bytes[index] == quote {
                index += 1
                let start = index
                var escaped = false
                while index < end, bytes[index] != quote {
                    if bytes[index] == backslash {
                        escaped = true
                        index += 1
                    }
                    index += 1
                }
                guard index < end else { return false }
                if escaped {
                    unescaped.removeAll(keepingCapacity: true)
                    var position = start
                    while position < index {
                        if bytes[position] == backslash { position += 1 }
                        unescaped.append(bytes[position])
                        position += 1
                    }
                    try unescaped.withUnsafeBufferPointer { try body($0) }
                } else {
                    try body(UnsafeBufferPointer(rebasing: bytes[start..<index]))
                }
                index += 1
            } else {
                let start = index
                while index < end, bytes[index] != comma {
                    guard bytes[index] != open, bytes[index] != close, bytes[index] != quote, bytes[index] != backslash else { return false }
                    index += 1
                }
                guard index > start else { return false }
                let element = UnsafeBufferPointer(rebasing: bytes[start..<index])
                try body(element.elementsEqual("NULL".utf8) ? nil : element)
            }
            if index == end { return true }
            guard bytes[index] == comma, index + 1 < end else { return false }
            index += 1
        }
    }
}
