import Foundation
import NIOCore
import TestSupport
import Testing
@testable import DiaryCore

/// The export's ZIP writer, checked by the readers users have (`ZipReaders`: Info-ZIP, 7-Zip,
/// bsdtar, Python, Java's ZipFile and ZipInputStream), and by Python's `zipfile` field by field.
@Suite("ZIP archive writer")
struct ZipArchiveWriterTests {
    enum Method { case stored, deflated }

    struct Member {
        var name: String
        var compression: Method
        var contents: [UInt8]
        /// Fed to `write` in pieces of this size; nil for one `entry` call.
        var chunk: Int?
    }

    /// What `zipfile` saw of one member.
    struct Seen: Decodable {
        var name: String
        var extractVersion: Int
        var headerOffset: UInt64
        var dateTime: [Int]
        var mtime: UInt32?
    }

    static let modified = Date(timeIntervalSince1970: 1_700_000_000)  // 2023-11-14 22:13:20 UTC

    static func random(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed | 1
        return (0..<count).map { _ in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state >> 24)
        }
    }

    static func text(_ count: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count + 64)
        var line = 0
        while bytes.count < count {
            bytes += Array("Day \(line): wrote in the diary, \(line % 7) photos, mood \(line % 5).\n".utf8)
            line += 1
        }
        return Array(bytes.prefix(count))
    }

    /// Writes `members` to a fresh archive file, streaming the chunked ones.
    static func write(_ members: [Member], zip64Threshold: UInt64 = UInt64(UInt32.max)) throws -> (folder: URL, archive: URL, bytes: [UInt8]) {
        var writer = ZipArchiveWriter(zip64Threshold: zip64Threshold)
        var archive = ByteBuffer()
        for member in members {
            let contents = ByteBuffer(bytes: member.contents)
            let compression: ZipCompression = member.compression == .stored ? .stored(contents) : .deflated
            if let chunk = member.chunk {
                var piece = try writer.startEntry(path: member.name, compression: compression, modified: modified)
                archive.writeBuffer(&piece)
                for start in stride(from: 0, to: contents.readableBytes, by: chunk) {
                    var output = try writer.write(contents.getSlice(at: start, length: min(chunk, contents.readableBytes - start))!)
                    archive.writeBuffer(&output)
                }
                piece = try writer.finishEntry()
                archive.writeBuffer(&piece)
            } else {
                var whole = try writer.entry(path: member.name, compression: compression, modified: modified, contents: contents)
                archive.writeBuffer(&whole)
            }
            #expect(writer.bytesWritten == UInt64(archive.readableBytes))
        }
        var end = try writer.finish()
        archive.writeBuffer(&end)
        #expect(writer.bytesWritten == UInt64(archive.readableBytes))

        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("zip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let bytes = Array(archive.readableBytesView)
        let url = folder.appendingPathComponent("export.zip")
        try Data(bytes).write(to: url)
        return (folder, url, bytes)
    }

    static let python = """
        import json, struct, sys, zipfile, zlib
        archive, manifest = sys.argv[1], json.load(open(sys.argv[2]))
        seen = []
        with zipfile.ZipFile(archive) as z:
            assert z.testzip() is None, "testzip failed"
            infos = z.infolist()
            assert [i.filename for i in infos] == [m["name"] for m in manifest], [i.filename for i in infos]
            for info, m in zip(infos, manifest):
                data = z.read(info)
                assert data == open(m["file"], "rb").read(), info.filename + ": bytes differ"
                assert zlib.crc32(data) == info.CRC and info.file_size == len(data), info.filename
                assert info.compress_type == m["method"], info.filename
                # UTF-8 names; a data descriptor (bit 3) for deflated entries only: a stored
                # entry's local header carries its CRC and sizes.
                assert info.flag_bits & 0x808 == (0x808 if m["method"] == 8 else 0x800), info.filename
                assert info.create_system == 3, info.filename
                assert info.external_attr >> 16 == 0o100644, info.filename
                mtime, extra = None, info.extra
                while len(extra) >= 4:
                    kind, size = struct.unpack("<HH", extra[:4])
                    if kind == 0x5455:
                        mtime = struct.unpack("<I", extra[5:9])[0]
                    extra = extra[4 + size:]
                seen.append({"name": info.filename, "extractVersion": info.extract_version,
                             "headerOffset": info.header_offset, "dateTime": list(info.date_time), "mtime": mtime})
        print(json.dumps(seen))
        """

    /// Checks the archive with every reader (`ZipReaders`) and field by field with `zipfile`,
    /// and returns what `zipfile` saw.
    static func verify(_ members: [Member], zip64Threshold: UInt64 = UInt64(UInt32.max)) async throws -> (seen: [Seen], bytes: [UInt8]) {
        let (folder, archive, bytes) = try write(members, zip64Threshold: zip64Threshold)
        defer { try? FileManager.default.removeItem(at: folder) }
        var manifest: [[String: Any]] = []
        for (index, member) in members.enumerated() {
            let file = folder.appendingPathComponent("expected-\(index)")
            try Data(member.contents).write(to: file)
            manifest.append(["name": member.name, "file": file.path, "method": member.compression == .stored ? 0 : 8])
        }
        let manifestFile = folder.appendingPathComponent("manifest.json")
        try JSONSerialization.data(withJSONObject: manifest).write(to: manifestFile)

        try await ZipReaders.expectEveryReaderReads(archive, expected: ZipReaders.listing(members.map { ($0.name, $0.contents) }))
        let python = try await Spawn.run("/usr/bin/env", ["python3", "-c", python, archive.path, manifestFile.path])
        try #require(python.status == 0, "zipfile: \(python.output)")
        return (try JSONDecoder().decode([Seen].self, from: Data(python.output.utf8)), bytes)
    }

    static func uint32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[offset + $1]) << (8 * $1) }
    }

    // MARK: Archives

    @Test("stored and deflated entries, an empty file and a non-ASCII name read back exactly")
    func mixedEntries() async throws {
        let members = [
            Member(name: "entries/2023-11-14.json", compression: .deflated, contents: Array(#"{"text":"hello"}"#.utf8)),
            Member(name: "photos/a.jpg", compression: .stored, contents: Self.random(70_000, seed: 1)),
            Member(name: "empty-stored.txt", compression: .stored, contents: []),
            Member(name: "empty-deflated.txt", compression: .deflated, contents: []),
            Member(name: "日記.txt", compression: .deflated, contents: Array("今日はいい天気でした。".utf8)),
            Member(name: "photos/b.jpg", compression: .stored, contents: Self.random(100_001, seed: 2), chunk: 8192),
        ]
        let (seen, bytes) = try await Self.verify(members)
        #expect(seen.map(\.extractVersion) == Array(repeating: 20, count: members.count))
        #expect(seen.allSatisfy { $0.dateTime == [2023, 11, 14, 22, 13, 20] && $0.mtime == 1_700_000_000 })
        // No Zip64 end record below the threshold: the classic record sits 22 bytes from the end.
        #expect(Self.uint32(bytes, at: bytes.count - 22) == 0x0605_4B50)
        #expect(!bytes.indices.dropLast(3).contains { Self.uint32(bytes, at: $0) == 0x0606_4B50 })
    }

    @Test("a deflated entry of several MB, compressible or random, streams in many chunks")
    func multiChunkDeflate() async throws {
        let text = Self.text(6_000_000)
        let noise = Self.random(3_000_000, seed: 3)
        let members = [
            Member(name: "diary.txt", compression: .deflated, contents: text, chunk: 65_536),
            Member(name: "noise.bin", compression: .deflated, contents: noise, chunk: 1_000_003),
            Member(name: "odd.txt", compression: .deflated, contents: Array(text.prefix(500_000)), chunk: 777),
        ]
        let (_, bytes) = try await Self.verify(members)
        #expect(bytes.count < text.count / 5 + noise.count + noise.count / 100 + 200_000)
    }

    @Test("Zip64 forced by a low threshold: every record past it takes the Zip64 form", arguments: [1, 200] as [UInt64])
    func zip64(threshold: UInt64) async throws {
        let members = [
            Member(name: "first.txt", compression: .deflated, contents: Self.text(300)),
            Member(name: "photo.jpg", compression: .stored, contents: Self.random(5000, seed: 4), chunk: 1000),
            Member(name: "日記.txt", compression: .deflated, contents: Self.text(20_000), chunk: 4096),
            Member(name: "empty.txt", compression: .stored, contents: []),
        ]
        let (seen, bytes) = try await Self.verify(members, zip64Threshold: threshold)
        #expect(seen.map { $0.headerOffset >= threshold ? 45 : 20 } == seen.map(\.extractVersion))
        #expect(seen.contains { $0.extractVersion == 45 })
        // Zip64 end record, its locator, then the classic record with its markers.
        let end = bytes.count - 22
        #expect(Self.uint32(bytes, at: end) == 0x0605_4B50)
        #expect(Array(bytes[(end + 8)..<(end + 20)]) == Array(repeating: 0xFF, count: 12))
        #expect(Self.uint32(bytes, at: end - 20) == 0x0706_4B50)
        #expect(Self.uint32(bytes, at: end - 20 - 56) == 0x0606_4B50)
    }

    // MARK: Misuse

    @Test("calls out of order, bad paths and oversized entries throw")
    func misuse() throws {
        var writer = ZipArchiveWriter()
        #expect(throws: ZipArchiveError.noOpenEntry) { try writer.write(ByteBuffer()) }
        #expect(throws: ZipArchiveError.noOpenEntry) { try writer.finishEntry() }
        for path in ["", "/etc/passwd", "a/../../b", "dir/", "a\\b", "nul\0"] {
            #expect(throws: ZipArchiveError.invalidPath(path)) { try writer.startEntry(path: path, compression: .deflated, modified: Self.modified) }
        }
        _ = try writer.startEntry(path: "a.txt", compression: .deflated, modified: Self.modified)
        #expect(throws: ZipArchiveError.entryStillOpen) { try writer.startEntry(path: "b.txt", compression: .deflated, modified: Self.modified) }
        #expect(throws: ZipArchiveError.entryStillOpen) { try writer.finish() }
        writer.entrySizeLimit = 10
        #expect(throws: ZipArchiveError.entryTooLarge("a.txt")) { try writer.write(ByteBuffer(bytes: Self.text(11))) }
        var stored = ZipArchiveWriter()
        #expect(throws: ZipArchiveError.entryTooLarge("big.jpg")) {
            try stored.startEntry(path: "big.jpg", compression: .stored(crc32: 0, size: 0xFFFF_FFFF), modified: Self.modified)
        }
        // A stored entry's bytes must be what its header declared, in CRC and in size.
        let photo = ByteBuffer(bytes: Self.random(1000, seed: 6))
        _ = try stored.startEntry(path: "a.jpg", compression: .stored(photo), modified: Self.modified)
        _ = try stored.write(photo.getSlice(at: 0, length: 999)!)
        #expect(throws: ZipArchiveError.storedContentMismatch("a.jpg")) { try stored.finishEntry() }
        var changed = ZipArchiveWriter()
        _ = try changed.startEntry(path: "b.jpg", compression: .stored(photo), modified: Self.modified)
        _ = try changed.write(ByteBuffer(bytes: Self.random(1000, seed: 8)))
        #expect(throws: ZipArchiveError.storedContentMismatch("b.jpg")) { try changed.finishEntry() }
        var fresh = ZipArchiveWriter()
        _ = try fresh.finish()
        #expect(throws: ZipArchiveError.archiveFinished) { try fresh.finish() }
    }

    @Test("DOS times clamp to 1980 and 2107; the extended timestamp covers 1970 to 2038")
    func dosTimes() throws {
        let members = [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 5_000_000_000), Date(timeIntervalSince1970: 951_782_401)]
        var writer = ZipArchiveWriter()
        var archive = ByteBuffer()
        for (index, modified) in members.enumerated() {
            var entry = try writer.entry(path: "\(index)", compression: .stored(ByteBuffer()), modified: modified, contents: ByteBuffer())
            archive.writeBuffer(&entry)
        }
        var end = try writer.finish()
        archive.writeBuffer(&end)
        let bytes = Array(archive.readableBytesView)
        // Each local header's time and date, at bytes 10...13.
        var offset = 0
        var found: [[UInt16]] = []
        while Self.uint32(bytes, at: offset) == 0x0403_4B50 {
            let word = Self.uint32(bytes, at: offset + 10)
            found.append([UInt16(word & 0xFFFF), UInt16(word >> 16)])
            let extra = Int(bytes[offset + 28]) | Int(bytes[offset + 29]) << 8
            offset += 30 + Int(bytes[offset + 26]) + extra  // stored and empty: no data, no descriptor
        }
        #expect(found[0] == [0, 1 << 5 | 1])  // 1980-01-01 00:00:00
        #expect(found[1] == [23 << 11 | 59 << 5 | 29, 127 << 9 | 12 << 5 | 31])  // 2107-12-31 23:59:58
        #expect(found[2] == [0, 20 << 9 | 2 << 5 | 29])  // 2000-02-29 00:00:01 → :00
    }

    // MARK: CRC-32

    @Test("CRC-32 matches the standard check values, in one piece or many")
    func crc32() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
        #expect(CRC32.checksum(Array("The quick brown fox jumps over the lazy dog".utf8)) == 0x414F_A339)
        #expect(CRC32.checksum([UInt8](repeating: 0, count: 32)) == 0x190A_55AD)

        // Every length and split against the bit-at-a-time definition.
        let bytes = Self.random(300, seed: 5)
        func reference(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
            }
            return ~crc
        }
        for length in 0...bytes.count {
            #expect(CRC32.checksum(bytes.prefix(length)) == reference(bytes.prefix(length)))
        }
        for split in [1, 7, 16, 17, 150] {
            var crc = CRC32()
            crc.update(ByteBuffer(bytes: bytes[..<split]))
            crc.update(bytes[split...])
            #expect(crc.value == reference(bytes[...]))
        }
    }
}
