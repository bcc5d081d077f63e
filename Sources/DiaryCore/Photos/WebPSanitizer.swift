/// Rewrites a WebP without its EXIF and XMP chunks. The RIFF container is walked chunk by
/// chunk; the kept ones (image data, alpha, ICC profile, animation frames, unknown chunks)
/// are copied as they are, VP8X stops announcing the metadata that is gone, and the RIFF
/// size is written anew. Bytes after the RIFF end are no part of the file and are dropped.
enum WebPSanitizer {
    /// VP8X flag bits announcing an EXIF and an XMP chunk.
    static let exifFlag: UInt8 = 0x08
    static let xmpFlag: UInt8 = 0x04

    static func sanitize(_ bytes: [UInt8]) throws(ImageRejection) -> SanitizedImage {
        // "RIFF", the size of what follows it, "WEBP" (which `ImageSanitizer.sniff` has seen).
        guard let riffSize = ImageSanitizer.uint32(bytes, at: 4, bigEndian: false), riffSize >= 4,
            ImageSanitizer.fits(8, riffSize, in: bytes.count)
        else { throw .unreadable("the WebP's RIFF size \(bytes.count < 8 ? "is missing" : "runs past the end")") }
        let end = 8 + riffSize

        var chunks: [UInt8] = []
        chunks.reserveCapacity(riffSize)
        var size: (width: Int, height: Int)?
        var position = 12

        while position < end {
            guard ImageSanitizer.fits(position, 8, in: end),
                let length = ImageSanitizer.uint32(bytes, at: position + 4, bigEndian: false)
            else { throw .unreadable("the WebP chunk at byte \(position) is cut short") }
            let fourCCBytes = Array(bytes[position..<(position + 4)])
            let fourCC = String(decoding: fourCCBytes, as: UTF8.self)
            guard ImageSanitizer.fits(position + 8, length, in: end) else {
                throw .unreadable("WebP chunk \(fourCC) at byte \(position) runs past the end")
            }
            var data = Array(bytes[(position + 8)..<(position + 8 + length)])
            // Odd-sized chunks are followed by a pad byte; a writer that leaves out the last one is forgiven.
            position = min(position + 8 + length + (length & 1), end)

            if size == nil {
                size = try dimensions(fourCC, data)
            } else if fourCC == "VP8X" {
                throw .unreadable("the WebP has a VP8X chunk that is not its first")
            }

            switch fourCC {
            case "EXIF", "XMP ":
                continue
            case "VP8X":
                // `dimensions` has seen its ten bytes.
                data[0] &= ~(exifFlag | xmpFlag)
            default:
                break
            }
            // The chunk's own type bytes, not `fourCC`: an unknown one need not be valid UTF-8.
            chunks += fourCCBytes
            chunks += littleEndian32(data.count)
            chunks += data
            if data.count & 1 == 1 { chunks.append(0) }
        }

        guard let size else { throw .unreadable("the WebP holds no chunk") }
        var output = Array("RIFF".utf8)
        output += littleEndian32(chunks.count + 4)
        output += Array("WEBP".utf8)
        output += chunks
        return SanitizedImage(contentType: .webp, width: size.width, height: size.height, bytes: output)
    }

    /// The size the first chunk gives: the canvas of an extended file (VP8X), else the
    /// frame of a simple lossy (VP8) or lossless (VP8L) one.
    static func dimensions(_ fourCC: String, _ data: [UInt8]) throws(ImageRejection) -> (width: Int, height: Int) {
        switch fourCC {
        case "VP8X":
            // Flags, three reserved bytes, then canvas width − 1 and height − 1 in 24 bits each.
            guard data.count >= 10, let width = ImageSanitizer.uint24LE(data, at: 4),
                let height = ImageSanitizer.uint24LE(data, at: 7)
            else { throw .unreadable("the WebP VP8X chunk is too short") }
            return (width + 1, height + 1)
        case "VP8 ":
            // A 3-byte frame tag whose low bit is 0 on a key frame, the start code 9d 01 2a,
            // then 14-bit width and height (the top two bits are an upscaling hint).
            guard data.count >= 10, data[0] & 1 == 0, ImageSanitizer.hasPrefix(data, [0x9D, 0x01, 0x2A], at: 3),
                let width = ImageSanitizer.uint16(data, at: 6, bigEndian: false),
                let height = ImageSanitizer.uint16(data, at: 8, bigEndian: false)
            else { throw .unreadable("the WebP VP8 chunk has no key frame header") }
            return (width & 0x3FFF, height & 0x3FFF)
        case "VP8L":
            // The signature 0x2f, then width − 1 and height − 1 in 14 bits each, least significant first.
            guard data.count >= 5, data[0] == 0x2F, let bits = ImageSanitizer.uint32(data, at: 1, bigEndian: false) else {
                throw .unreadable("the WebP VP8L chunk has no header")
            }
            guard bits >> 29 == 0 else { throw .unreadable("the WebP VP8L version is not 0") }
            return ((bits & 0x3FFF) + 1, (bits >> 14 & 0x3FFF) + 1)
        default:
            throw .unreadable("the WebP starts with a \(fourCC) chunk, not VP8, VP8L or VP8X")
        }
    }

    static func littleEndian32(_ value: Int) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }
}
