import Crypto
import Foundation
import Testing
import TestSupport

/// Every ZIP reader that Debian's packages give (`scripts/test-tools.sh install`), each made to
/// read a whole archive: Info-ZIP's `unzip -t`, 7-Zip's `7zz t`, bsdtar streaming from a pipe,
/// Python's `zipfile`, and Java's `ZipFile` and streaming `ZipInputStream`. People open exports
/// with all of these, and the streaming ones need what the others forgive.
enum ZipReaders {
    static let javaReader = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fixtures/ZipReaders.java").path

    /// "name<TAB>sha256" for each file, sorted.
    static func listing(_ files: [(name: String, contents: [UInt8])]) -> [String] {
        files.map { "\($0.name)\t\(SHA256.hash(data: $0.contents).map { String(format: "%02x", $0) }.joined())" }.sorted()
    }

    /// Expects every reader to read `archive` without an error and to find exactly the files
    /// `expected` lists (`listing`).
    static func expectEveryReaderReads(_ archive: URL, expected: [String]) async throws {
        let unzip = try await Spawn.run("/usr/bin/unzip", ["-t", archive.path])
        #expect(unzip.status == 0 && unzip.output.contains("No errors detected"), "unzip -t: \(unzip.output)")
        let sevenZip = try await Spawn.run("/usr/bin/env", ["7zz", "t", archive.path])
        #expect(sevenZip.status == 0 && sevenZip.output.contains("Everything is Ok"), "7zz t: \(sevenZip.output)")

        let python = try await Spawn.run("/usr/bin/env", ["python3", "-c", """
            import hashlib, sys, zipfile
            with zipfile.ZipFile(sys.argv[1]) as z:
                assert z.testzip() is None, "testzip failed"
                for info in z.infolist():
                    print(info.filename + "\\t" + hashlib.sha256(z.read(info)).hexdigest())
            """, archive.path])
        #expect(python.status == 0, "python zipfile: \(python.output)")
        #expect(lines(python.output) == expected, "python zipfile")

        for mode in ["zipfile", "stream"] {
            let java = try await Spawn.run("/usr/bin/env", ["java", javaReader, mode, archive.path])
            #expect(java.status == 0, "java \(mode): \(java.output)")
            #expect(lines(java.output) == expected, "java \(mode): \(java.output)")
        }

        // bsdtar from a pipe cannot seek to the central directory: it reads as a stream does.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bsdtar-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let bsdtar = try await Spawn.run("/bin/sh", ["-c", "bsdtar -xf - -C \"$1\" < \"$2\"", "sh", folder.path, archive.path])
        #expect(bsdtar.status == 0, "bsdtar: \(bsdtar.output)")
        #expect(listing(try files(in: folder)) == expected, "bsdtar")
    }

    private static func lines(_ output: String) -> [String] {
        output.split(separator: "\n").map(String.init).filter { $0.contains("\t") }.sorted()
    }

    /// Every regular file under `folder`, named by its path inside it.
    static func files(in folder: URL) throws -> [(name: String, contents: [UInt8])] {
        let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey])
        var files: [(name: String, contents: [UInt8])] = []
        while let url = enumerator?.nextObject() as? URL {
            guard try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true else { continue }
            let name = String(url.standardizedFileURL.path.dropFirst(folder.standardizedFileURL.path.count + 1))
            files.append((name, Array(try Data(contentsOf: url))))
        }
        return files
    }
}
