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

    /// Returns nil for anything but a one-dimensional literal; a NULL element is nil inside the array.
    static func parse(_ text: String) -> [String?]? {
        var iterator = Array(text.unicodeScalars).makeIterator()
        guard iterator.next() == "{" else { return nil }
        var elements: [String?] = []
        var expectElement = true
        while let scalar = iterator.next() {
            switch scalar {
            case "}" where elements.isEmpty && expectElement:
                return iterator.next() == nil ? [] : nil
            case "\"" where expectElement:
                var element = String.UnicodeScalarView()
                var closed = false
                while let next = iterator.next() {
                    if next == "\\" {
                        guard let escaped = iterator.next() else { return nil }
                        element.append(escaped)
                    } else if next == "\"" {
                        closed = true
                        break
                    } else {
                        element.append(next)
                    }
                }
                guard closed else { return nil }
                elements.append(String(element))
                expectElement = false
            case "{":
                return nil
            case ",", "}":
                return nil
            default:
                var element = String.UnicodeScalarView([scalar])
                var terminator: Unicode.Scalar?
                while let next = iterator.next() {
                    if next == "," || next == "}" { terminator = next; break }
                    element.append(next)
                }
                let value = String(element)
                elements.append(value == "NULL" ? nil : value)
                guard let terminator else { return nil }
                if terminator == "}" { return iterator.next() == nil ? elements : nil }
                continue
            }
            // After a quoted element: a separator or the end.
            guard let separator = iterator.next() else { return nil }
            if separator == "}" { return iterator.next() == nil ? elements : nil }
            guard separator == "," else { return nil }
            expectElement = true
        }
        return nil
    }
}
