import CompressNIO
package import Foundation
package import NIOCore

package enum ZipCompression: Sendable, Equatable {
    /// The bytes as they are (method 0): for photos, which are compressed already. Their CRC-32
    /// and size must be known before the bytes: they go in the local header, because a
    /// streaming reader (Java's `ZipInputStream`, Android's) cannot otherwise tell where a
    /// stored entry ends. `finishEntry` checks the bytes against them.
    case stored(crc32: UInt32, size: UInt64)
    /// Raw deflate (method 8), its CRC-32 and sizes in a data descriptor after the data.
    case deflated

    /// `.stored`, with the CRC-32 and size of `contents`.
    package static func stored(_ contents: ByteBuffer) -> ZipCompression {
        var crc = CRC32()
        crc.update(contents)
        return .stored(crc32: crc.value, size: UInt64(contents.readableBytes))
    }
}

package enum ZipArchiveError: Error, Equatable {
    /// `startEntry` or `finish` while an entry is open.
    case entryStillOpen
    /// `write` or `finishEntry` with no entry open.
    case noOpenEntry
    /// Anything after `finish`.
    case archiveFinished
    /// Empty, absolute, with a `..` component, a `\` or a NUL, ending in `/`, or over 65,535
    /// UTF-8 bytes.
    case invalidPath(String)
    /// The entry's data reaches 4 GiB, which its 32-bit data descriptor cannot describe.
    case entryTooLarge(String)
    /// A stored entry's bytes are not the CRC-32 and size its local header declared.
    case storedContentMismatch(String)
}

/// Writes a ZIP archive front to back while it is sent, in constant memory: every call returns
/// the bytes to send next, and only the central directory (one small record per entry) is kept
/// until `finish`.
///
/// Call order: for each file `startEntry`, any number of `write`, then `finishEntry` (or
/// `entry` for a small whole file); then `finish` once. Send every returned buffer, in order.
/// After an error the archive cannot be completed: abandon it.
///
/// Each local header has bit 11 (the name is UTF-8). A deflated entry's also has bit 3: its CRC
/// and sizes are unknown when the header goes out, and follow the data in a data descriptor.
/// A stored entry's header carries them itself, and no descriptor follows.
///
/// Zip64: the central directory gets a Zip64 extra for each entry whose local header starts at
/// or past `zip64Threshold`, and the archive gets the Zip64 end records when the central
/// directory's offset or size, or the entry count, reaches it. An entry's own sizes are always
/// 32-bit: a 64-bit data descriptor needs a Zip64 extra in the local header, which would mark
/// every entry "version 4.5" for files that never approach 4 GiB (photos and text), and 64-bit
/// descriptors trip some readers. An entry that does reach 4 GiB throws `entryTooLarge` rather
/// than write a descriptor that lies.
///
/// A copy shares the deflate stream of the writer it was copied from: use one writer only.
package struct ZipArchiveWriter {
    private let allocator: ByteBufferAllocator
    private let zip64Threshold: UInt64
    /// The largest size an entry may have: 0xFFFFFFFF is the Zip64 marker, not a size. Lowered
    /// only by tests.
    var entrySizeLimit: UInt64 = 0xFFFF_FFFE
    private var centralDirectory: ByteBuffer
    private var entryCount: UInt64 = 0
    private var open: OpenEntry?
    private var finished = false
    /// Made at the first deflated entry and reset, not remade, for each one after.
    private var deflater: NIOCompressor?
    /// Where deflate writes before its output is copied out at its exact size; reused.
    private var scratch: ByteBuffer
    /// Returned when deflate has nothing ready, which small writes often meet.
    private let empty: ByteBuffer

    /// Every byte returned so far: the next local header's offset.
    package private(set) var bytesWritten: UInt64 = 0

    private struct OpenEntry {
        var path: String
        var compression: ZipCompression
        var time: DOSTime
        var headerOffset: UInt64
        var crc = CRC32()
        var uncompressedSize: UInt64 = 0
        var compressedSize: UInt64 = 0

        /// General purpose flags: bit 11 (UTF-8 name), and bit 3 (data descriptor) when deflated.
        var flags: UInt16 { compression == .deflated ? 0x0808 : 0x0800 }
    }
    /// "Made by" Unix (3 in the high byte), so readers take the external attributes as a mode.
    private static let madeByUnix: UInt16 = 3 << 8

    /// - Parameter zip64Threshold: local header offsets, and the central directory's offset
    ///   and size, at or past it take the Zip64 form; so do entry counts at or past it or
    ///   0xFFFF. Tests lower it to exercise Zip64 without writing 4 GiB.
    package init(allocator: ByteBufferAllocator = ByteBufferAllocator(), zip64Threshold: UInt64 = UInt64(UInt32.max)) {
        self.allocator = allocator
        self.zip64Threshold = zip64Threshold
        self.centralDirectory = allocator.buffer(capacity: 4096)
        self.scratch = allocator.buffer(capacity: 0)
        self.empty = allocator.buffer(capacity: 0)
    }

    /// Opens an entry and returns its local file header.
    package mutating func startEntry(path: String, compression: ZipCompression, modified: Date) throws -> ByteBuffer {
        guard !finished else { throw ZipArchiveError.archiveFinished }
        guard open == nil else { throw ZipArchiveError.entryStillOpen }
        try Self.validate(path)
        if case .stored(_, let size) = compression, size > entrySizeLimit { throw ZipArchiveError.entryTooLarge(path) }
        if compression == .deflated {
            if let deflater {
                try deflater.resetStream()
            } else {
                let made = CompressionAlgorithm.deflate().compressor
                try made.startStream()
                deflater = made
            }
        }
        let time = DOSTime(modified)
        let entry = OpenEntry(path: path, compression: compression, time: time, headerOffset: bytesWritten)
        open = entry

        // Version needed 2.0 (deflate, data descriptors). Deflated: CRC and sizes zero, as bit 3
        // asks; stored: the declared ones.
        var declaredCRC: UInt32 = 0
        var declaredSize: UInt32 = 0
        if case .stored(let crc, let size) = compression {
            declaredCRC = crc
            declaredSize = UInt32(size)
        }
        var header = allocator.buffer(capacity: 30 + path.utf8.count + 9)
        header.writeMultipleIntegers(
            UInt32(0x0403_4B50), UInt16(20), entry.flags, compression.method, time.time, time.date,
            declaredCRC, declaredSize, declaredSize, UInt16(path.utf8.count), UInt16(time.unix == nil ? 0 : 9),
            endianness: .little
        )
        header.writeString(path)
        if let unix = time.unix {
            // Extended timestamp, local form: flags (modification time present), mtime.
            header.writeMultipleIntegers(UInt16(0x5455), UInt16(5), UInt8(1), unix, endianness: .little)
        }
        bytesWritten += UInt64(header.readableBytes)
        return header
    }

    /// Takes the next piece of the open entry's data and returns the bytes to send for it: the
    /// piece itself when stored; when deflated, whatever deflate has ready, which may be nothing.
    package mutating func write(_ chunk: ByteBuffer) throws -> ByteBuffer {
        guard var entry = open else { throw finished ? ZipArchiveError.archiveFinished : ZipArchiveError.noOpenEntry }
        entry.crc.update(chunk)
        entry.uncompressedSize += UInt64(chunk.readableBytes)
        guard entry.uncompressedSize <= entrySizeLimit else { throw ZipArchiveError.entryTooLarge(entry.path) }

        var output = chunk
        if entry.compression == .deflated {
            if output.readableBytes > 0 {
                try deflate(&output)
            }
            output = takeScratch()
        }
        entry.compressedSize += UInt64(output.readableBytes)
        guard entry.compressedSize <= entrySizeLimit else { throw ZipArchiveError.entryTooLarge(entry.path) }
        open = entry
        bytesWritten += UInt64(output.readableBytes)
        return output
    }

    /// Closes the open entry: returns the rest of its deflate output and its data descriptor
    /// (nothing for a stored entry, whose bytes it checks against its header), and files its
    /// central directory record.
    package mutating func finishEntry() throws -> ByteBuffer {
        guard var entry = open else { throw finished ? ZipArchiveError.archiveFinished : ZipArchiveError.noOpenEntry }
        var output: ByteBuffer
        switch entry.compression {
        case .stored(let crc, let size):
            guard entry.crc.value == crc, entry.uncompressedSize == size else { throw ZipArchiveError.storedContentMismatch(entry.path) }
            output = empty
        case .deflated:
            try finishDeflate()
            output = takeScratch(reserving: 16)
            entry.compressedSize += UInt64(output.readableBytes)
            guard entry.compressedSize <= entrySizeLimit else { throw ZipArchiveError.entryTooLarge(entry.path) }
            output.writeMultipleIntegers(
                UInt32(0x0807_4B50), entry.crc.value, UInt32(entry.compressedSize), UInt32(entry.uncompressedSize),
                endianness: .little
            )
        }
        appendCentralRecord(for: entry)
        open = nil
        entryCount += 1
        bytesWritten += UInt64(output.readableBytes)
        return output
    }

    /// A whole small file at once: its local header, data and data descriptor (for a stored
    /// file, pass `.stored(contents)`).
    package mutating func entry(path: String, compression: ZipCompression, modified: Date, contents: ByteBuffer) throws -> ByteBuffer {
        var output = try startEntry(path: path, compression: compression, modified: modified)
        var data = try write(contents)
        var tail = try finishEntry()
        output.writeBuffer(&data)
        output.writeBuffer(&tail)
        return output
    }

    /// Ends the archive: the central directory, the Zip64 end records when needed, and the end
    /// of central directory record.
    package mutating func finish() throws -> ByteBuffer {
        guard !finished else { throw ZipArchiveError.archiveFinished }
        guard open == nil else { throw ZipArchiveError.entryStillOpen }
        finished = true
        deflater = nil
        let directoryOffset = bytesWritten
        let directorySize = UInt64(centralDirectory.readableBytes)
        var output = centralDirectory
        centralDirectory = allocator.buffer(capacity: 0)
        output.reserveCapacity(minimumWritableBytes: 56 + 20 + 22)

        let zip64 = entryCount >= min(zip64Threshold, 0xFFFF) || directoryOffset >= zip64Threshold
            || directorySize >= zip64Threshold
        if zip64 {
            // The Zip64 end of central directory record (its size after the size field, made
            // by, version needed, this disk, the directory's disk, entries here and in all, the
            // directory's size and offset), then its locator (the record's disk and offset,
            // disks in all).
            output.writeMultipleIntegers(
                UInt32(0x0606_4B50), UInt64(44), Self.madeByUnix | 45, UInt16(45), UInt32(0), UInt32(0),
                entryCount, entryCount, directorySize, directoryOffset,
                endianness: .little
            )
            output.writeMultipleIntegers(
                UInt32(0x0706_4B50), UInt32(0), directoryOffset + directorySize, UInt32(1),
                endianness: .little
            )
        }
        // Under Zip64 every count, size and offset here is the marker, as most writers do, so no
        // reader takes a truncated value for the real one. Disks are 0; no comment.
        output.writeMultipleIntegers(
            UInt32(0x0605_4B50), UInt16(0), UInt16(0),
            zip64 ? UInt16.max : UInt16(entryCount), zip64 ? UInt16.max : UInt16(entryCount),
            zip64 ? UInt32.max : UInt32(directorySize), zip64 ? UInt32.max : UInt32(directoryOffset), UInt16(0),
            endianness: .little
        )
        bytesWritten += UInt64(output.readableBytes)
        return output
    }

    // MARK: - Parts

    private mutating func appendCentralRecord(for entry: OpenEntry) {
        let zip64 = entry.headerOffset >= zip64Threshold
        let version: UInt16 = zip64 ? 45 : 20
        let extraLength = (zip64 ? 12 : 0) + (entry.time.unix == nil ? 0 : 9)
        centralDirectory.writeMultipleIntegers(
            UInt32(0x0201_4B50), Self.madeByUnix | version, version, entry.flags, entry.compression.method,
            entry.time.time, entry.time.date, entry.crc.value, UInt32(entry.compressedSize),
            UInt32(entry.uncompressedSize), UInt16(entry.path.utf8.count), UInt16(extraLength),
            endianness: .little
        )
        // Comment length, the entry's disk, internal attributes, external attributes (a regular
        // file, rw-r--r--), the local header's offset.
        centralDirectory.writeMultipleIntegers(
            UInt16(0), UInt16(0), UInt16(0), UInt32(0o100644) << 16,
            zip64 ? UInt32.max : UInt32(entry.headerOffset),
            endianness: .little
        )
        centralDirectory.writeString(entry.path)
        if zip64 {
            // Only the fields whose 32-bit slot holds the marker: here the offset alone.
            centralDirectory.writeMultipleIntegers(UInt16(0x0001), UInt16(8), entry.headerOffset, endianness: .little)
        }
        if let unix = entry.time.unix {
            // Extended timestamp, central form: the modification time only.
            centralDirectory.writeMultipleIntegers(UInt16(0x5455), UInt16(5), UInt8(1), unix, endianness: .little)
        }
    }

    /// Feeds all of `input` to deflate, growing `scratch` whenever it fills.
    private mutating func deflate(_ input: inout ByteBuffer) throws {
        guard let deflater else { throw CompressNIOError.uninitializedStream }
        scratch.reserveCapacity(minimumWritableBytes: deflater.maxSize(from: input))
        while input.readableBytes > 0 {
            do {
                try deflater.streamDeflate(from: &input, to: &scratch, flush: .no)
            } catch let error as CompressNIOError where error == .bufferOverflow {
                // No room to make progress: grow below.
            }
            if input.readableBytes > 0 {
                scratch.reserveCapacity(minimumWritableBytes: max(scratch.capacity, 65536))
            }
        }
    }

    /// Drains deflate's pending output and ends the stream, growing `scratch` until it fits.
    private mutating func finishDeflate() throws {
        guard let deflater else { throw CompressNIOError.uninitializedStream }
        scratch.reserveCapacity(minimumWritableBytes: 65536)
        while true {
            do {
                return try deflater.finishDeflate(to: &scratch)
            } catch let error as CompressNIOError where error == .bufferOverflow {
                scratch.reserveCapacity(minimumWritableBytes: max(scratch.capacity, 65536))
            }
        }
    }

    /// `scratch`'s bytes in a buffer of their own size (plus `extra`); `scratch` is emptied for
    /// reuse, or let go when one large chunk has grown it past 4 MiB.
    private mutating func takeScratch(reserving extra: Int = 0) -> ByteBuffer {
        if scratch.readableBytes == 0 && extra == 0 { return empty }
        var output = allocator.buffer(capacity: scratch.readableBytes + extra)
        output.writeBuffer(&scratch)
        if scratch.capacity > 4 << 20 {
            scratch = allocator.buffer(capacity: 0)
        } else {
            scratch.clear()
        }
        return output
    }

    private static func validate(_ path: String) throws {
        guard !path.isEmpty, path.utf8.count <= 0xFFFF, !path.hasPrefix("/"), !path.hasSuffix("/"),
            !path.contains("\\"), !path.utf8.contains(0),
            !path.split(separator: "/", omittingEmptySubsequences: false).contains("..")
        else { throw ZipArchiveError.invalidPath(path) }
    }
}

extension ZipCompression {
    fileprivate var method: UInt16 { self == .deflated ? 8 : 0 }
}

/// A modification time as ZIP holds it: MS-DOS date and time, and Unix seconds for the
/// extended timestamp extra.
private struct DOSTime {
    var time: UInt16
    var date: UInt16
    /// Nil before 1970 or after 2038, where readers disagree on the field's sign.
    var unix: UInt32?

    /// DOS time has no zone and readers take it as local; it is written in UTC, and the
    /// extended timestamp gives readers that know it (unzip, macOS) the exact instant.
    init(_ date: Date) {
        let exact = date.timeIntervalSince1970.rounded(.down)
        unix = (0...Double(Int32.max)).contains(exact) ? UInt32(exact) : nil
        // DOS dates span 1980-01-01 to 2107-12-31, in steps of two seconds.
        let seconds = Int64(min(max(exact, 315_532_800), 4_354_819_198))
        let days = seconds / 86400
        let second = seconds % 86400
        // Days since 1970 to a civil date (Howard Hinnant's algorithm, for days >= 0).
        let z = days + 719_468
        let era = z / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        self.time = UInt16((second / 3600) << 11 | (second % 3600 / 60) << 5 | (second % 60) / 2)
        self.date = UInt16((year - 1980) << 9 | month << 5 | day)
    }
}
