@testable import DiaryCore

/// Walks a sanitized image on its own, without the sanitizers' code, and says what it holds
/// that it must not: EXIF beyond a lone Orientation, XMP, IPTC, comments, text chunks, or
/// bytes after the image's end. ICC colour profiles stay, as the sanitizers document: they
/// say how to show the colours (a phone's Display P3 photo turns dull without its profile)
/// and hold no place.
enum ImageStructure {
    /// Bytes an output may have beyond its input: a RIFF chunk of odd length ends with a pad
    /// byte, which some writers leave out of the last chunk and the WebP sanitizer puts back.
    static func growthAllowed(_ format: PhotoContentType) -> Int {
        format == .webp ? 1 : 0
    }

    static func checkJPEG(_ image: SanitizedImage) throws(PropertyViolation) {
        let bytes = image.bytes
        try require(bytes.starts(with: [0xFF, 0xD8]), "the JPEG output does not start with SOI")
        var position = 2
        var scanning = false
        var exifBlocks = 0
        while position < bytes.count {
            try require(bytes[position] == 0xFF && position + 1 < bytes.count, "no marker at byte \(position) of the output")
            let marker = bytes[position + 1]
            position += 2
            switch marker {
            case 0xD9:
                try require(position == bytes.count, "\(bytes.count - position) bytes follow the output's End Of Image")
                return
            case 0x01, 0xD0...0xD7:
                continue
            default:
                break
            }
            try require(position + 2 <= bytes.count, "a segment header is cut short at byte \(position)")
            let length = Int(bytes[position]) << 8 | Int(bytes[position + 1])
            try require(length >= 2 && position + length <= bytes.count, "segment 0x\(marker) at byte \(position) runs past the end")
            let payload = Array(bytes[(position + 2)..<(position + length)])
            position += length
            switch marker {
            case 0xE0:
                try require(!scanning && payload.starts(with: Array("JFIF\0".utf8)), "an APP0 block other than JFIF is kept")
            case 0xE1:
                exifBlocks += 1
                try require(!scanning && exifBlocks == 1, "more than one APP1 block is kept")
                guard let orientation = image.orientation else { throw PropertyViolation("an APP1 block is kept for an upright picture") }
                try require(payload == lonelyOrientation(orientation), "the APP1 block kept is not a lone Orientation")
            case 0xE2:
                try require(!scanning && payload.starts(with: Array("ICC_PROFILE\0".utf8)), "an APP2 block other than ICC is kept")
            case 0xEE:
                try require(!scanning && payload.starts(with: Array("Adobe".utf8)), "an APP14 block other than Adobe's is kept")
            case 0xE3...0xED, 0xEF:
                throw PropertyViolation("an APP\(marker - 0xE0) block is kept")
            case 0xFE:
                throw PropertyViolation("a comment is kept")
            case 0xDA:
                scanning = true
                position = endOfScan(bytes, from: position)
            default:
                break
            }
        }
        try require(scanning, "the JPEG output ends before its first scan")
        try require(image.orientation == nil || exifBlocks == 1, "orientation \(image.orientation ?? 0) is reported but not written")
    }

    /// An EXIF block holding IFD0 with Orientation alone, as its payload after the length.
    static func lonelyOrientation(_ value: Int) -> [UInt8] {
        Array("Exif\0\0".utf8) + [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, UInt8(value), 0, 0, 0, 0, 0, 0]
    }

    /// Past the entropy-coded data from `start`: at the next 0xFF that is neither stuffed
    /// (0xFF00), a fill byte before a marker, nor a restart marker.
    static func endOfScan(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start
        while index + 1 < bytes.count {
            if bytes[index] == 0xFF, bytes[index + 1] != 0x00, bytes[index + 1] != 0xFF, !(0xD0...0xD7).contains(bytes[index + 1]) {
                return index
            }
            index += 1
        }
        return bytes.count
    }

    /// Chunks that may say where, when or by whom: text (which also carries XMP), EXIF in
    /// each spelling, and the modification time.
    static let pngMetadataChunks: Set<String> = ["tEXt", "zTXt", "iTXt", "eXIf", "exIf", "zxIf", "tIME"]

    static func checkPNG(_ bytes: [UInt8]) throws(PropertyViolation) {
        try require(bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "the PNG output has no signature")
        var position = 8
        while true {
            try require(position + 8 <= bytes.count, "the PNG output ends before IEND")
            let length = bytes[position..<(position + 4)].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: bytes[(position + 4)..<(position + 8)], as: UTF8.self)
            try require(position + 12 + length <= bytes.count, "PNG chunk \(type) runs past the end of the output")
            try require(!pngMetadataChunks.contains(type), "the PNG output keeps a \(type) chunk")
            position += 12 + length
            if type == "IEND" { break }
        }
        try require(position == bytes.count, "\(bytes.count - position) bytes follow the PNG output's IEND")
    }

    static func checkWebP(_ bytes: [UInt8]) throws(PropertyViolation) {
        func littleEndian32(_ at: Int) -> Int { (0..<4).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
        try require(bytes.count >= 12 && bytes.starts(with: Array("RIFF".utf8)) && Array(bytes[8..<12]) == Array("WEBP".utf8), "the WebP output has no RIFF header")
        try require(littleEndian32(4) == bytes.count - 8, "the WebP output's RIFF size is not its length")
        var position = 12
        var first = true
        while position < bytes.count {
            try require(position + 8 <= bytes.count, "a WebP chunk header is cut short")
            let fourCC = String(decoding: bytes[position..<(position + 4)], as: UTF8.self)
            let length = littleEndian32(position + 4)
            try require(position + 8 + length + (length & 1) <= bytes.count, "WebP chunk \(fourCC) runs past the end")
            try require(fourCC != "EXIF" && fourCC != "XMP ", "the WebP output keeps a \(fourCC) chunk")
            if first, fourCC == "VP8X" {
                try require(bytes[position + 8] & 0x0C == 0, "VP8X still announces EXIF or XMP")
            }
            first = false
            position += 8 + length + (length & 1)
        }
    }
}
