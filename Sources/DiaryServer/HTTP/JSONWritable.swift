import DiaryModels
import Foundation
import PostgresClient

/// A response type that writes its own JSON, skipping `Encodable`'s generic containers.
///
/// perf on GET timeline put the Codable path of `StreamingJSONEncoder` at 17% of the
/// server's CPU, much of it in generic metadata lookups per member. The timeline's types
/// spell out their members here instead: the same keys in the same order as their
/// synthesised `encode(to:)`, nil optionals left out, which `StreamingJSONEncoderTests`
/// checks against JSONEncoder.
protocol JSONWritable {
    func writeJSON(to output: JSONOutput)
}

extension JSONOutput {
    /// `{` or `,`, then `"key":`. `first` says which.
    fileprivate func key(_ key: StaticString, first: Bool = false) {
        bytes.append(first ? UInt8(ascii: "{") : UInt8(ascii: ","))
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    fileprivate func end() { bytes.append(UInt8(ascii: "}")) }

    fileprivate func array<Element>(_ elements: [Element], _ writeElement: (Element) -> Void) {
        bytes.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            writeElement(element)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    fileprivate func writeDate(_ date: Date) { writeString(PostgresTimestamp.format(date)) }
}

extension EntryPage: JSONWritable {
    func writeJSON(to output: JSONOutput) {
        output.key("entries", first: true)
        output.array(entries) { $0.writeJSON(to: output) }
        if let nextCursor {
            output.key("nextCursor")
            output.writeString(nextCursor)
        }
        output.end()
    }
}

extension Entry: JSONWritable {
    func writeJSON(to output: JSONOutput) {
        output.key("id", first: true)
        output.writeUUID(id)
        output.key("diaryId")
        output.writeUUID(diaryId)
        output.key("author")
        author.writeJSON(to: output)
        output.key("content")
        output.writeString(content)
        if let question {
            output.key("question")
            output.writeString(question)
        }
        output.key("images")
        output.array(images) { output.writeString($0) }
        output.key("createdAt")
        output.writeDate(createdAt)
        output.key("updatedAt")
        output.writeDate(updatedAt)
        output.key("readBy")
        output.array(readBy) { $0.writeJSON(to: output) }
        output.key("isMine")
        output.writeRaw(isMine ? "true" : "false")
        output.end()
    }
}

extension Entry.Author: JSONWritable {
    func writeJSON(to output: JSONOutput) {
        output.key("id", first: true)
        output.writeUUID(id)
        output.key("displayName")
        output.writeString(displayName)
        if let profileImageUrl {
            output.key("profileImageUrl")
            output.writeString(profileImageUrl)
        }
        output.end()
    }
}

extension ReadReceipt: JSONWritable {
    func writeJSON(to output: JSONOutput) {
        output.key("userId", first: true)
        output.writeUUID(userId)
        output.key("readAt")
        output.writeDate(readAt)
        output.end()
    }
}
