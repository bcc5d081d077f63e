import Foundation
@testable import DiaryCore

extension FuzzTarget {
    /// Cursors as clients send them back (`since`, `before`): text this server could have
    /// written is accepted with a value whose encoding reads back as the same value, and
    /// everything else is refused (400 or 410, as the routes document), never a trap.
    static func checkCursors(_ bytes: [UInt8]) throws(PropertyViolation) {
        try checkCursorText(String(decoding: bytes, as: UTF8.self))
    }

    static func checkCursorText(_ text: String) throws(PropertyViolation) {
        if let decoded = Base64URL.decode(text) {
            try require(Base64URL.encode(decoded) == text, "base64url accepts \(text), which is not the canonical spelling of its bytes")
        }
        if let cursor = ChangeCursor(text) {
            try require(ChangeCursor.isWellFormed(text), "ChangeCursor accepts \(text), which isWellFormed refuses")
            try require(cursor.encoded.utf8.count <= ChangeCursor.maximumLength, "the cursor \(cursor) encodes past \(ChangeCursor.maximumLength) characters")
            try require(ChangeCursor(cursor.encoded) == cursor, "the change cursor \(cursor) does not read back from its encoding")
        }
        if let cursor = EntryRepository.Cursor(text) {
            let encoded = cursor.encoded
            try require(EntryRepository.Cursor(encoded)?.encoded == encoded, "the entry cursor \(text) does not read back from its encoding \(encoded)")
        }
    }
}
