import DiaryModels
import Foundation

/// A response type that writes its own JSON, skipping `Encodable`'s generic containers.
///
/// The Codable path of `StreamingJSONEncoder` looks up generic metadata for every member.
/// The largest responses, a timeline page and the list of diaries, spell out their members
/// here instead:
/// the same keys in the same order as their synthesised `encode(to:)`, nil optionals
/// left out, which `StreamingJSONEncoderTests` checks against JSONEncoder.
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

    fileprivate func member(_ name: StaticString, first: Bool = false, _ value: UUID) {
        key(name, first: first)
        writeUUID(value)
    }

    fileprivate func member(_ name: StaticString, _ value: Date) {
        key(name)
        writeDate(value)
    }

    /// Left out when nil, as the synthesised `encode(to:)` does with `encodeIfPresent`.
    fileprivate func member(_ name: StaticString, _ value: Date?) {
        guard let value else { return }
        member(name, value)
    }

    fileprivate func member(_ name: StaticString, _ value: Int) {
        key(name)
        writeRaw(String(value))
    }

    /// Left out when nil, as the synthesised `encode(to:)` does with `encodeIfPresent`.
    fileprivate func member(_ name: StaticString, _ value: String?) {
        guard let value else { return }
        key(name)
        writeString(value)
    }

    fileprivate func member<Element>(_ name: StaticString, first: Bool = false, _ elements: [Element], _ writeElement: (Element) -> Void) {
        key(name, first: first)
        bytes.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            writeElement(element)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    fileprivate func end() { bytes.append(UInt8(ascii: "}")) }
}

extension EntryPage: JSONWritable {
    func writeJSON(to output: JSONOutput) {
        output.member("entries", first: true, entries) { $0.writeJSON(to: output) }
        output.member("nextCursor", nextCursor)
        output.member("changesCursor", changesCursor)
        output.end()
    }
}

extension Entry: JSONWritable {
    func writeJSON(to output: JSONOutput) {
        output.member("id", first: true, id)
        output.member("diaryId", diaryId)
        output.key("author")
        author.writeJSON(to: output)
        output.member("content", content)
        output.member("question", question)
        output.member("images", images) { output.writeString($0) }
        output.member("photos", photos) { $0.writeJSON(to: output) }
        output.member("createdAt", createdAt)
        output.member("updatedAt", updatedAt)
        output.member("readBy", readBy) { $0.writeJSON(to: output) }
        output.key("isMine")
        output.writeRaw(isMine ? "true" : "false")
        output.end()
    }
}

extension Entry.Author: JSONWritable {
    func writeJSON(to output: JSONOutput) {
        output.member("id", first: true, id)
        output.member("displayName", displayName)
        output.member("profileImageUrl", profileImageUrl)
        output.end()
    }
}

extension Photo: JSONWritable {
    func writeJSON(to output: JSONOutput) {
        output.member("id", first: true, id)
        output.member("contentType", contentType)
        output.member("bytes", bytes)
        output.member("width", width)
        output.member("height", height)
        output.member("url", url)
        output.member("urlExpiresAt", urlExpiresAt)
        output.end()
    }
}

extension ReadReceipt: JSONWritable {
    func writeJSON(to output: JSONOutput) {
        output.member("userId", first: true, userId)
        output.member("readAt", readAt)
        output.end()
    }
}

extension DiaryList: JSONWritable {
    func writeJSON(to output: JSONOutput) {
        output.member("diaries", first: true, diaries) { $0.writeJSON(to: output) }
        output.end()
    }
}

extension Diary: JSONWritable {
    func writeJSON(to output: JSONOutput) {
        output.member("id", first: true, id)
        output.member("name", name)
        output.member("type", type.rawValue)
        output.member("maxMembers", maxMembers)
        output.member("inviteCode", inviteCode)
        output.member("inviteUrl", inviteUrl)
        output.member("role", role.rawValue)
        output.member("memberCount", memberCount)
        output.member("members", members) { $0.writeJSON(to: output) }
        output.member("createdAt", createdAt)
        output.member("lastEntryAt", lastEntryAt)
        output.member("unreadCount", unreadCount)
        output.member("changesCursor", changesCursor)
        output.end()
    }
}

extension Member: JSONWritable {
    func writeJSON(to output: JSONOutput) {
        output.member("userId", first: true, userId)
        output.member("displayName", displayName)
        output.member("profileImageUrl", profileImageUrl)
        output.member("role", role.rawValue)
        output.member("joinedAt", joinedAt)
        output.end()
    }
}
