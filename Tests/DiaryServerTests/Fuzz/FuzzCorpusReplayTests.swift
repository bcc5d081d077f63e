import Foundation
import FuzzProperties
import Testing
import TestSupport
@testable import DiaryCore

/// Every committed fuzzing corpus (Fuzz/Corpus/<target>), each file once through its target's
/// properties, with no fuzzing: a finding that comes back fails here in seconds.
@Suite("Fuzz corpus replay")
struct FuzzCorpusReplayTests {
    static let fuzz = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    static func corpus(of target: FuzzTarget) throws -> [URL] {
        let folder = fuzz.appendingPathComponent("Corpus/\(target.rawValue)")
        return try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    /// Off the cooperative pool: the Apple target waits for the verifier as libFuzzer's thread does.
    @Test("each corpus file keeps its target's properties", arguments: FuzzTarget.allCases)
    func replay(target: FuzzTarget) async throws {
        let files = try Self.corpus(of: target)
        #expect(!files.isEmpty, "Fuzz/Corpus/\(target.rawValue) is empty")
        let failures = try await OffPool.run {
            try files.compactMap { file -> String? in
                let bytes = Array(try Data(contentsOf: file))
                do {
                    try target.check(bytes)
                    return nil
                } catch {
                    return "\(target.rawValue)/\(file.lastPathComponent): \(error)"
                }
            }
        }
        for failure in failures { Issue.record("\(failure)") }
    }

    @Test("the Apple corpus reaches the accepting path: the notifications signed as Apple's documentation shows verify")
    func appleCorpusVerifies() async throws {
        for name in ["account-delete", "consent-revoked", "email-disabled"] {
            let bytes = Array(try Data(contentsOf: Self.fuzz.appendingPathComponent("Corpus/apple/\(name)")))
            let notification = try await OffPool.run { try FuzzTarget.verifyAppleNotification(bytes).get() }
            #expect(notification.type == name)
        }
    }

    @Test("Python's zipfile reads back each ZIP corpus entry's archive: the same names and contents")
    func zipReadBack() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("zip-readback-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var archives = 0
        for file in try Self.corpus(of: .zip) {
            let (archive, members) = try FuzzTarget.zipArchive(Array(try Data(contentsOf: file)))
            guard !archive.isEmpty else { continue }
            let manifest = members.map { ["name": $0.name, "contents": Data($0.contents).base64EncodedString()] }
            try Data(archive).write(to: folder.appendingPathComponent("\(file.lastPathComponent).zip"))
            try JSONSerialization.data(withJSONObject: manifest).write(to: folder.appendingPathComponent("\(file.lastPathComponent).json"))
            archives += 1
        }
        #expect(archives > 0, "no ZIP corpus entry makes an archive")
        let result = try await Spawn.run("/usr/bin/env", ["python3", Self.fuzz.appendingPathComponent("zip-readback.py").path, folder.path])
        #expect(result.status == 0, "zip-readback.py: \(result.output)")
    }
}
