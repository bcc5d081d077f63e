import Foundation

/// The few fields this client reads from S3's XML answers (ListObjectsV2, errors). Their
/// shape is fixed and flat, so a scan for `<Tag>text</Tag>` with XML's five entities and
/// numeric references decoded reads them; no XML library is in the package mirrors, and
/// Foundation's XMLParser would need libxml2 on every server.
enum S3XML {
    /// The text of every `<tag>…</tag>`, in order.
    static func values(_ tag: String, in xml: Substring) -> [String] {
        elements(tag, in: xml).map(decode)
    }

    static func value(_ tag: String, in xml: Substring) -> String? {
        values(tag, in: xml).first
    }

    /// Each `<tag>…</tag>` element's inside, undecoded, for records such as `<Contents>`.
    static func elements(_ tag: String, in xml: Substring) -> [Substring] {
        var found: [Substring] = []
        let open = "<\(tag)>", close = "</\(tag)>"
        var rest = xml
        while let start = rest.range(of: open), let end = rest[start.upperBound...].range(of: close) {
            found.append(rest[start.upperBound..<end.lowerBound])
            rest = rest[end.upperBound...]
        }
        return found
    }

    static func decode(_ text: Substring) -> String {
        guard text.contains("&") else { return String(text) }
        var output = ""
        var rest = text[...]
        while let amp = rest.firstIndex(of: "&") {
            output += rest[..<amp]
            guard let semicolon = rest[amp...].firstIndex(of: ";") else { break }
            let entity = rest[rest.index(after: amp)..<semicolon]
            switch entity {
            case "amp": output += "&"
            case "lt": output += "<"
            case "gt": output += ">"
            case "quot": output += "\""
            case "apos": output += "'"
            default:
                let number = entity.hasPrefix("#x") ? UInt32(entity.dropFirst(2), radix: 16) : entity.hasPrefix("#") ? UInt32(entity.dropFirst()) : nil
                if let number, let scalar = Unicode.Scalar(number) { output.unicodeScalars.append(scalar) } else { output += "&\(entity);" }
            }
            rest = rest[rest.index(after: semicolon)...]
        }
        return output + rest
    }
}
