/// Rewrites a PNG without its text, EXIF and timestamp chunks. Every other chunk is copied
/// byte for byte, CRC included, so nothing that draws the picture changes. Anything after
/// IEND goes too: it is no part of the image and can hide anything.
enum PNGSanitizer {
    /// Chunks that can hold a place, an author or a device: free text (tEXt, zTXt, iTXt,
    /// which also carries XMP), EXIF (eXIf, and the exIf and zxIf spellings used before it was
    /// registered), and when the picture was made (tIME).
    static let dropped: Set<String> = ["tEXt", "zTXt", "iTXt", "eXIf", "exIf", "zxIf", "tIME"]

    static func sanitize(_ bytes: [UInt8]) throws(ImageRejection) -> SanitizedImage {
        var output = Array(bytes.prefix(8))  // the signature, which `ImageSanitizer.sniff` has seen
        output.reserveCapacity(bytes.count)
        var size: (width: Int, height: Int)?
        var position = 8

        while true {
            guard ImageSanitizer.fits(position, 8, in: bytes.count),
                let length = ImageSanitizer.uint32(bytes, at: position, bigEndian: true)
            else { throw .unreadable("the PNG ends before its IEND chunk") }
            let typeBytes = bytes[(position + 4)..<(position + 8)]
            // Chunk types are four ASCII letters; anything else means the lengths went astray.
            guard typeBytes.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) else {
                throw .unreadable("PNG chunk at byte \(position) has no valid type")
            }
            let type = String(decoding: typeBytes, as: UTF8.self)
            // Length, type, data, CRC; lengths above 2³¹−1 are invalid in PNG.
            guard length <= 0x7FFF_FFFF, ImageSanitizer.fits(position, length + 12, in: bytes.count) else {
                throw .unreadable("PNG chunk \(type) at byte \(position) runs past the end")
            }
            let chunk = position..<(position + 12 + length)
            position = chunk.upperBound

            if size == nil {
                guard type == "IHDR", length == 13,
                    let width = ImageSanitizer.uint32(bytes, at: chunk.lowerBound + 8, bigEndian: true),
                    let height = ImageSanitizer.uint32(bytes, at: chunk.lowerBound + 12, bigEndian: true)
                else { throw .unreadable("the PNG does not start with a 13-byte IHDR chunk") }
                guard width <= 0x7FFF_FFFF, height <= 0x7FFF_FFFF else {
                    throw .unreadable("the PNG's IHDR has a side above 2³¹−1")
                }
                size = (width, height)
            } else if type == "IHDR" {
                throw .unreadable("the PNG has a second IHDR chunk")
            }

            if !dropped.contains(type) {
                output += bytes[chunk]
            }
            if type == "IEND" { break }
        }

        guard let size else { throw .unreadable("the PNG has no IHDR chunk") }
        return SanitizedImage(contentType: .png, width: size.width, height: size.height, bytes: output)
    }
}
