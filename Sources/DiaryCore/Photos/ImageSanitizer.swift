/// The photo formats the server stores. The raw value is the MIME type a client declares
/// and the server serves back.
package enum PhotoContentType: String, Sendable, CaseIterable, Codable {
    case jpeg = "image/jpeg"
    case png = "image/png"
    case webp = "image/webp"
}

/// A photo fit to store: the declared format confirmed, its size read, and every block that
/// can say where it was taken or on which device gone.
package struct SanitizedImage: Sendable, Equatable {
    package var contentType: PhotoContentType
    /// As the header says, before any EXIF orientation turns the picture.
    package var width: Int
    package var height: Int
    /// What is stored and served.
    package var bytes: [UInt8]
    /// The JPEG EXIF orientation kept (2–8): nil for other formats and for upright JPEGs.
    package var orientation: Int?

    package init(contentType: PhotoContentType, width: Int, height: Int, bytes: [UInt8], orientation: Int? = nil) {
        self.contentType = contentType
        self.width = width
        self.height = height
        self.bytes = bytes
        self.orientation = orientation
    }
}

/// Why an upload is not stored.
package enum ImageRejection: Error, Equatable, Sendable {
    /// The magic bytes are not the declared format: another of ours, HEIC, GIF or garbage (HTTP 415).
    case notDeclaredType
    /// The header cannot be parsed: truncated, inconsistent lengths, a zero side (HTTP 422).
    case unreadable(String)
    /// A side is longer than `ImageSanitizer.maximumSide` (HTTP 422).
    case tooLarge(width: Int, height: Int)
}

/// Checks an uploaded photo and rewrites it without identifying metadata. Pure byte work on
/// `[UInt8]`: every length read from the file is checked against what is there, so no
/// input, however malformed, reads past the end or traps.
package enum ImageSanitizer {
    /// Longer sides are refused: decoding one would cost the clients hundreds of megabytes.
    package static let maximumSide = 12_000

    /// The format the magic bytes say, nil when none of ours.
    package static func sniff(_ prefix: ArraySlice<UInt8>) -> PhotoContentType? {
        let start = prefix.startIndex
        func matches(_ signature: [UInt8], at offset: Int) -> Bool {
            guard prefix.count >= offset + signature.count else { return false }
            return signature.indices.allSatisfy { prefix[start + offset + $0] == signature[$0] }
        }
        if matches([0xFF, 0xD8, 0xFF], at: 0) { return .jpeg }
        if matches([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], at: 0) { return .png }
        if matches(Array("RIFF".utf8), at: 0), matches(Array("WEBP".utf8), at: 8) { return .webp }
        return nil
    }

    package static func sanitize(_ bytes: [UInt8], declaredAs declared: PhotoContentType) throws(ImageRejection) -> SanitizedImage {
        guard sniff(bytes[...]) == declared else { throw .notDeclaredType }
        let image: SanitizedImage
        switch declared {
        case .jpeg: image = try JPEGSanitizer.sanitize(bytes)
        case .png: image = try PNGSanitizer.sanitize(bytes)
        case .webp: image = try WebPSanitizer.sanitize(bytes)
        }
        guard image.width > 0, image.height > 0 else {
            throw .unreadable("the image is \(image.width)×\(image.height) pixels")
        }
        guard image.width <= maximumSide, image.height <= maximumSide else {
            throw .tooLarge(width: image.width, height: image.height)
        }
        return image
    }
}

// Bounds-checked reads shared by the format sanitizers: each returns nil rather than reading
// past either end, so a length field that lies turns into a rejection, never a trap.
extension ImageSanitizer {
    static func uint16(_ bytes: [UInt8], at offset: Int, bigEndian: Bool) -> Int? {
        guard offset >= 0, offset <= bytes.count - 2 else { return nil }
        let (a, b) = (Int(bytes[offset]), Int(bytes[offset + 1]))
        return bigEndian ? a << 8 | b : b << 8 | a
    }

    static func uint24LE(_ bytes: [UInt8], at offset: Int) -> Int? {
        guard offset >= 0, offset <= bytes.count - 3 else { return nil }
        return Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16
    }

    static func uint32(_ bytes: [UInt8], at offset: Int, bigEndian: Bool) -> Int? {
        guard offset >= 0, offset <= bytes.count - 4 else { return nil }
        let value = (0..<4).reduce(0) { value, index in
            value << 8 | Int(bytes[offset + (bigEndian ? index : 3 - index)])
        }
        return value
    }

    /// Whether `bytes` holds `expected` at `offset`, false when it runs out first.
    static func hasPrefix(_ bytes: [UInt8], _ expected: [UInt8], at offset: Int = 0) -> Bool {
        guard offset >= 0, offset <= bytes.count - expected.count else { return false }
        return expected.indices.allSatisfy { bytes[offset + $0] == expected[$0] }
    }

    /// Whether a range of `length` bytes from `offset` lies inside `count` bytes, in a form
    /// that cannot overflow however large the length read from the file.
    static func fits(_ offset: Int, _ length: Int, in count: Int) -> Bool {
        offset >= 0 && length >= 0 && offset <= count && length <= count - offset
    }
}
