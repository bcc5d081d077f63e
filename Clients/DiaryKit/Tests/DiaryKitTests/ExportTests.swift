import DiaryKit
import Foundation
import Testing

/// Exports: the ZIP streams to a file, under the diary's own name.
@Suite("Exports")
struct ExportTests {
    @Test("a diary's export is a ZIP named after the diary, its filename* read intact")
    func diaryExport() async throws {
        try await LiveServer.with { server in
            let aiko = try await server.signedIn("aiko")
            // The runtime reads headers as URI components, decoding filename*'s percent-encoding
            // once already: a name with "%25" in it would then be decoded twice, and lost.
            let diary = try await aiko.createDiary(name: "ふたり100%日記", type: .couple)
            _ = try await aiko.post(EntryDraft(diaryID: diary.id, content: "書き出す"))
            let export = try await aiko.exportDiary(id: diary.id)
            let filename = try #require(export.filename)
            #expect(filename.hasPrefix("ふたり100%日記-") && filename.hasSuffix(".zip"), "\(filename)")
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("diarykit-\(UUID().uuidString).zip")
            defer { try? FileManager.default.removeItem(at: file) }
            try await export.write(to: file)
            let bytes = try Data(contentsOf: file)
            #expect(bytes.prefix(4) == Data([0x50, 0x4B, 0x03, 0x04]))
        }
    }
}
