@testable import DiaryCore
import Foundation
import Testing

/// The cursor's text: what the server writes reads back, and nothing it could not have
/// written is taken for a cursor.
@Suite("Change cursor")
struct ChangeCursorTests {
    @Test("a cursor of many diaries reads back as written, at every size of position, and fits its limit at the most diaries")
    func roundTrip() throws {
        var positions: [UUID: Int64] = [:]
        for (index, position) in [0, 1, 127, 128, 16_383, 16_384, 1 << 35, Int64.max].enumerated() {
            positions[UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", index))!] = position
        }
        let cursor = ChangeCursor(positions: positions)
        #expect(ChangeCursor(cursor.encoded) == cursor)
        #expect(ChangeCursor(ChangeCursor().encoded) == ChangeCursor())

        let most = ChangeCursor(positions: Dictionary(uniqueKeysWithValues: (0..<ChangeCursor.maximumDiaries).map { _ in (UUID(), Int64.max) }))
        #expect(most.encoded.utf8.count <= ChangeCursor.maximumLength)
        #expect(ChangeCursor.isWellFormed(most.encoded))
        #expect(ChangeCursor(most.encoded) == most)
        var tooMany = most
        tooMany[UUID()] = 1
        #expect(ChangeCursor(tooMany.encoded) == nil)
    }

    @Test("another version, a cut id, an unfinished or over-long position, a position past Int64 or a diary named twice is no cursor")
    func refusals() {
        let id = UUID()
        let idBytes = withUnsafeBytes(of: id.uuid) { Array($0) }
        func text(_ bytes: [UInt8]) -> String { Base64URL.encode(Data(bytes)) }
        #expect(ChangeCursor(text([2] + idBytes + [5])) == ChangeCursor(positions: [id: 5]))
        for bytes: [UInt8] in [
            [1] + idBytes + [5],
            [2] + idBytes.prefix(10),
            [2] + idBytes,
            [2] + idBytes + [0x85],
            [2] + idBytes + [0x85, 0x00],
            [2] + idBytes + Array(repeating: 0xff, count: 9) + [0x01],
            [2] + idBytes + [5] + idBytes + [6],
        ] {
            #expect(ChangeCursor(text(bytes)) == nil, "\(bytes)")
        }
        #expect(ChangeCursor("") == nil)
        #expect(!ChangeCursor.isWellFormed(String(repeating: "A", count: ChangeCursor.maximumLength + 1)))
        #expect(!ChangeCursor.isWellFormed("a+b"))
    }
}
