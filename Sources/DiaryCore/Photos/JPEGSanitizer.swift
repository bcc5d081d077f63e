/// Rewrites a JPEG without identifying metadata. The segments before the first scan are
/// walked one by one and only those that shape the picture are kept; EXIF (GPS, camera make
/// and serial, maker notes), XMP, IPTC, comments and every other application block go. The
/// one EXIF value that changes how the picture looks, Orientation, comes back in a minimal
/// EXIF block of its own.
///
/// The compressed scans are copied as they are, except that application blocks and comments
/// between progressive scans go too, and nothing after End Of Image survives: phones append
/// second pictures (MPF depth maps, previews, each with its own EXIF) and Motion Photo videos
/// (with their own location) there.
enum JPEGSanitizer {
    static func sanitize(_ bytes: [UInt8]) throws(ImageRejection) -> SanitizedImage {
        var output: [UInt8] = [0xFF, 0xD8]
        output.reserveCapacity(bytes.count)
        // Where the minimal EXIF goes: after SOI, or after a JFIF block that opens the file, as JFIF wants to be first.
        var exifInsertion = 2
        var orientation: Int?
        var size: (width: Int, height: Int)?
        var scanning = false
        var position = 2  // past SOI, which `ImageSanitizer.sniff` has seen

        walk: while true {
            guard position < bytes.count else {
                // A file cut inside its compressed data still shows what arrived; one cut before it shows nothing.
                if scanning { break walk }
                throw .unreadable("the JPEG ends before its first scan")
            }
            guard bytes[position] == 0xFF else {
                throw .unreadable("no JPEG marker at byte \(position)")
            }
            // Any number of 0xFF fill bytes may come before a marker; they carry nothing and are not copied.
            while position < bytes.count, bytes[position] == 0xFF { position += 1 }
            guard position < bytes.count else {
                if scanning { break walk }
                throw .unreadable("the JPEG ends before its first scan")
            }
            let marker = bytes[position]
            position += 1

            switch marker {
            case 0xD9:  // EOI: the picture ends, and so does what is kept.
                guard scanning else { throw .unreadable("the JPEG ends before its first scan") }
                output += [0xFF, 0xD9]
                break walk
            case 0x00, 0xD8:
                throw .unreadable("unexpected JPEG marker 0x\(hex(marker)) at byte \(position - 1)")
            case 0x01, 0xD0...0xD7:  // TEM and RSTn stand alone, without a length.
                output += [0xFF, marker]
                continue walk
            default:
                break
            }

            guard let length = ImageSanitizer.uint16(bytes, at: position, bigEndian: true), length >= 2,
                ImageSanitizer.fits(position, length, in: bytes.count)
            else {
                throw .unreadable("JPEG segment 0x\(hex(marker)) at byte \(position - 2) runs past the end")
            }
            let segment = position..<(position + length)
            let payload = Array(bytes[(position + 2)..<segment.upperBound])
            position = segment.upperBound

            var keep = true
            switch marker {
            case 0xE0...0xEF, 0xFE:
                keep = !scanning && keepsApplicationSegment(marker, payload)
                if marker == 0xE1, orientation == nil, !scanning {
                    orientation = exifOrientation(payload)
                }
            case 0xC0...0xC3, 0xC5...0xC7, 0xC9...0xCB, 0xCD...0xCF:
                // A hierarchical JPEG has later frames after its first scan; the first frame gives the size.
                if !scanning {
                    guard size == nil else { throw .unreadable("the JPEG has two frame headers before its first scan") }
                    guard payload.count >= 6, let height = ImageSanitizer.uint16(payload, at: 1, bigEndian: true),
                        let width = ImageSanitizer.uint16(payload, at: 3, bigEndian: true)
                    else { throw .unreadable("the JPEG frame header is too short") }
                    size = (width, height)
                }
            case 0xDA:
                guard size != nil else { throw .unreadable("the JPEG has a scan before its frame header") }
            default:
                break
            }

            if keep {
                output += [0xFF, marker]
                output += bytes[segment]
                if marker == 0xE0, output.count == 4 + length { exifInsertion = output.count }
            }
            if marker == 0xDA {
                scanning = true
                let end = endOfEntropyCodedData(bytes, from: position)
                output += bytes[position..<end]
                position = end
            }
        }

        guard let size else { throw .unreadable("the JPEG has no frame header") }
        // 1 is upright, the meaning of no EXIF at all, so it needs no block.
        let kept = orientation.flatMap { (2...8).contains($0) ? $0 : nil }
        if let kept {
            output.insert(contentsOf: minimalEXIF(orientation: kept), at: exifInsertion)
        }
        return SanitizedImage(contentType: .jpeg, width: size.width, height: size.height, bytes: output, orientation: kept)
    }

    /// Application blocks kept before the first scan: JFIF (pixel density), an ICC colour
    /// profile and Adobe's (which says how to convert the colours). None can hold a place or
    /// a device; everything else (EXIF, XMP, MPF, IPTC, maker blocks, comments) can.
    static func keepsApplicationSegment(_ marker: UInt8, _ payload: [UInt8]) -> Bool {
        switch marker {
        case 0xE0: ImageSanitizer.hasPrefix(payload, Array("JFIF\0".utf8))
        case 0xE2: ImageSanitizer.hasPrefix(payload, Array("ICC_PROFILE\0".utf8))
        case 0xEE: ImageSanitizer.hasPrefix(payload, Array("Adobe".utf8))
        default: false
        }
    }

    /// Where the compressed data that starts at `start` ends: at the 0xFF (or the first of
    /// its fill bytes) of the next marker that is neither a stuffed 0xFF00 nor a restart
    /// marker, or at the end of the bytes.
    static func endOfEntropyCodedData(_ bytes: [UInt8], from start: Int) -> Int {
        var index = start
        while index < bytes.count {
            guard bytes[index] == 0xFF else {
                index += 1
                continue
            }
            var next = index + 1
            while next < bytes.count, bytes[next] == 0xFF { next += 1 }
            guard next < bytes.count else { return bytes.count }
            if bytes[next] == 0x00 || (0xD0...0xD7).contains(bytes[next]) {
                index = next + 1
            } else {
                return index
            }
        }
        return bytes.count
    }

    /// IFD0's Orientation in an APP1 payload, nil when it is not EXIF, has none, or is
    /// malformed: a broken EXIF is dropped like any other, not a reason to refuse the photo.
    static func exifOrientation(_ payload: [UInt8]) -> Int? {
        // "Exif\0" and a pad byte (some writers put 0xFF there rather than 0), then a TIFF file.
        guard ImageSanitizer.hasPrefix(payload, Array("Exif\0".utf8)), payload.count > 6 else { return nil }
        // A block shorter than the one that carries the orientation on is no whole TIFF (IFD0
        // ends with the next IFD's offset), and trading it for ours would make the output
        // larger than the upload.
        guard payload.count + 4 >= minimalEXIF(orientation: 1).count else { return nil }
        let tiff = Array(payload[6...])
        let bigEndian: Bool
        if ImageSanitizer.hasPrefix(tiff, [0x49, 0x49, 0x2A, 0x00]) {
            bigEndian = false
        } else if ImageSanitizer.hasPrefix(tiff, [0x4D, 0x4D, 0x00, 0x2A]) {
            bigEndian = true
        } else {
            return nil
        }
        guard let ifd = ImageSanitizer.uint32(tiff, at: 4, bigEndian: bigEndian), ifd >= 8,
            let entries = ImageSanitizer.uint16(tiff, at: ifd, bigEndian: bigEndian),
            // An entry count that runs past the end means the rest cannot be trusted either.
            ImageSanitizer.fits(ifd + 2, 12 * entries, in: tiff.count)
        else { return nil }
        for entry in 0..<entries {
            let offset = ifd + 2 + 12 * entry
            guard let tag = ImageSanitizer.uint16(tiff, at: offset, bigEndian: bigEndian),
                let type = ImageSanitizer.uint16(tiff, at: offset + 2, bigEndian: bigEndian),
                let count = ImageSanitizer.uint32(tiff, at: offset + 4, bigEndian: bigEndian)
            else { return nil }
            guard tag == 0x0112 else { continue }
            // SHORT, one value, held in the first two bytes of the value field.
            guard type == 3, count == 1, let value = ImageSanitizer.uint16(tiff, at: offset + 8, bigEndian: bigEndian),
                (1...8).contains(value)
            else { return nil }
            return value
        }
        return nil
    }

    /// An APP1 segment whose EXIF holds only IFD0 with one entry, Orientation, so viewers
    /// still turn the picture the way the camera meant.
    static func minimalEXIF(orientation: Int) -> [UInt8] {
        let tiff: [UInt8] = [
            0x4D, 0x4D, 0x00, 0x2A, 0x00, 0x00, 0x00, 0x08,  // big-endian TIFF header, IFD0 at 8
            0x00, 0x01,  // one entry
            0x01, 0x12, 0x00, 0x03, 0x00, 0x00, 0x00, 0x01,  // Orientation, SHORT, one value
            0x00, UInt8(orientation), 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00,  // no IFD1: no thumbnail
        ]
        let payload = Array("Exif\0\0".utf8) + tiff
        let length = payload.count + 2
        return [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
    }

    static func hex(_ byte: UInt8) -> String {
        let digits = String(byte, radix: 16, uppercase: true)
        return digits.count == 1 ? "0" + digits : digits
    }
}
