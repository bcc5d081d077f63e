import Foundation
import NIOCore
@testable import DiaryCore

extension FuzzTarget {
    /// One file as the ZIP target asks the writer for it.
    package struct ZipMember: Equatable, Sendable {
        package var name: String
        package var contents: [UInt8]
    }

    /// The ZIP writer with names and contents the fuzzer chooses: each record is a flags byte
    /// (bit 0 deflated, bit 1 written in chunks of `flags >> 3 + 1` bytes, bit 2 a stored
    /// entry that declares one byte more than it holds), a name length byte and the name (any
    /// UTF-8, invalid bytes replaced), a two-byte content length and the contents.
    ///
    /// A name outside the writer's documented rule is refused as `invalidPath`, a declared size
    /// that lies as `storedContentMismatch`, and every accepted member is in the central
    /// directory under its name, in order. `FuzzCorpusReplayTests` has Python's `zipfile`
    /// read each corpus entry's archive back.
    static func checkZipArchive(_ bytes: [UInt8]) throws(PropertyViolation) {
        _ = try zipArchive(bytes)
    }

    /// The archive `bytes` asks for, and the members in it.
    package static func zipArchive(_ bytes: [UInt8]) throws(PropertyViolation) -> (archive: [UInt8], members: [ZipMember]) {
        var input = FuzzInput(bytes)
        var writer = ZipArchiveWriter()
        var archive = ByteBuffer()
        var members: [ZipMember] = []
        let modified = Date(timeIntervalSince1970: 1_767_225_600)
        while !input.isEmpty, members.count < 32 {
            let flags = input.byte()
            let name = String(decoding: input.take(Int(input.byte())), as: UTF8.self)
            let contents = input.take(Int(input.byte()) << 8 | Int(input.byte()))
            let buffer = ByteBuffer(bytes: contents)
            let lies = flags & 4 != 0 && flags & 1 == 0
            let compression: ZipCompression = flags & 1 == 1 ? .deflated
                : lies ? .stored(crc32: CRC32.checksum(contents), size: UInt64(contents.count + 1)) : .stored(buffer)
            do {
                if flags & 2 == 0, !lies {
                    var whole = try writer.entry(path: name, compression: compression, modified: modified, contents: buffer)
                    archive.writeBuffer(&whole)
                } else {
                    var piece = try writer.startEntry(path: name, compression: compression, modified: modified)
                    archive.writeBuffer(&piece)
                    let chunk = Int(flags >> 3) + 1
                    for start in stride(from: 0, to: contents.count, by: chunk) {
                        var output = try writer.write(buffer.getSlice(at: start, length: min(chunk, contents.count - start))!)
                        archive.writeBuffer(&output)
                    }
                    piece = try writer.finishEntry()
                    archive.writeBuffer(&piece)
                }
                try require(isValidZipPath(name), "the writer accepts the name \(name.debugDescription)")
                try require(!lies, "a stored entry's declared size that lies is accepted")
                members.append(ZipMember(name: name, contents: contents))
            } catch ZipArchiveError.invalidPath(let refused) {
                try require(!isValidZipPath(name) && refused == name, "the writer refuses the name \(name.debugDescription)")
                return ([], [])
            } catch ZipArchiveError.storedContentMismatch {
                try require(lies, "a stored entry whose size is right is refused")
                return ([], [])
            } catch let violation as PropertyViolation {
                throw violation
            } catch {
                throw PropertyViolation("the writer throws \(error) for \(name.debugDescription)")
            }
        }
        do {
            var end = try writer.finish()
            archive.writeBuffer(&end)
        } catch {
            throw PropertyViolation("finish throws \(error)")
        }
        let written = Array(archive.readableBytesView)
        try require(writer.bytesWritten == UInt64(written.count), "bytesWritten is \(writer.bytesWritten), the archive \(written.count) bytes")
        try require(centralDirectoryNames(written) == members.map(\.name), "the central directory does not list the members in order")
        return (written, members)
    }

    /// The writer's documented rule: not empty, relative, no `..` component, no `\` or NUL,
    /// not ending in `/`, at most 65,535 UTF-8 bytes.
    static func isValidZipPath(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 0xFFFF && !name.hasPrefix("/") && !name.hasSuffix("/") && !name.contains("\\")
            && !name.utf8.contains(0) && !name.split(separator: "/", omittingEmptySubsequences: false).contains("..")
    }

    /// The names in the central directory, which the end record locates; nil when it cannot be read.
    static func centralDirectoryNames(_ archive: [UInt8]) -> [String]? {
        func uint(_ at: Int, _ width: Int) -> Int? {
            guard at >= 0, at + width <= archive.count else { return nil }
            return (0..<width).reduce(0) { $0 | Int(archive[at + $1]) << (8 * $1) }
        }
        let end = archive.count - 22
        guard uint(end, 4) == 0x0605_4B50, let count = uint(end + 10, 2), var position = uint(end + 16, 4) else { return nil }
        var names: [String] = []
        for _ in 0..<count {
            guard uint(position, 4) == 0x0201_4B50, let nameLength = uint(position + 28, 2), let extra = uint(position + 30, 2),
                let comment = uint(position + 32, 2), position + 46 + nameLength <= archive.count
            else { return nil }
            names.append(String(decoding: archive[(position + 46)..<(position + 46 + nameLength)], as: UTF8.self))
            position += 46 + nameLength + extra + comment
        }
        return names
    }
}
