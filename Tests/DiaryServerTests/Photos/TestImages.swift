/// Real image files built byte by byte, with the metadata a phone puts in them, and readers
/// that tests use to look at what the server stores and serves. The secrets are recognisable
/// strings so a test can show they are gone from the output.
enum TestImages {
    /// Strings planted in metadata; none may survive sanitising.
    static let secrets = [
        "TestCam", "Phone 1", "MAKERNOTE-SECRET", "exif:GPSLatitude", "http://ns.adobe.com/xap/1.0/", "Photoshop 3.0",
        "IPTC-SECRET", "COMMENT-SECRET", "TEXT-SECRET", "ZTXT-SECRET", "ITXT-SECRET", "XMP-SECRET",
    ]
    /// GPSLatitude's numerators, big-endian as in an MM EXIF and little-endian as in an II one.
    static let latitudeMarker: UInt32 = 0x5EC2_E7A7
    static let iccProfile = Array("ICC-PROFILE-COLOUR-ONLY".utf8)

    // MARK: JPEG

    /// A baseline grayscale JPEG every decoder reads: each 8×8 block is a flat grey (DC
    /// difference 0, then end of block).
    static func jpeg(
        width: Int = 16, height: Int = 8, orientation: Int? = nil, gps: Bool = false, xmp: Bool = false, makerNote: Bool = false,
        iptc: Bool = false, comment: Bool = false, icc: Bool = false, exif: Bool = false, bigEndianEXIF: Bool = false,
        jfif: Bool = true, restartInterval: Int? = nil
    ) -> [UInt8] {
        var out: [UInt8] = [0xFF, 0xD8]
        if jfif {
            out += segment(0xE0, Array("JFIF\0".utf8) + [1, 2, 0, 0, 1, 0, 1, 0, 0])
        }
        if exif || orientation != nil || gps || makerNote {
            let tiff = exifTIFF(orientation: orientation, gps: gps, makerNote: makerNote, bigEndian: bigEndianEXIF)
            out += segment(0xE1, Array("Exif\0\0".utf8) + tiff)
        }
        if xmp {
            out += segment(0xE1, Array("http://ns.adobe.com/xap/1.0/\0".utf8) + xmpPacket)
        }
        if icc {
            out += segment(0xE2, Array("ICC_PROFILE\0".utf8) + [1, 1] + iccProfile)
        }
        if iptc {
            // A Photoshop image resource block (8BIM 0x0404) holding one IPTC dataset, 2:120 Caption.
            let caption = Array("IPTC-SECRET caption".utf8)
            let dataset: [UInt8] = [0x1C, 0x02, 0x78] + be16(caption.count) + caption
            let resource = Array("8BIM".utf8) + [0x04, 0x04, 0x00, 0x00] + be32(dataset.count) + dataset
            out += segment(0xED, Array("Photoshop 3.0\0".utf8) + resource)
        }
        if comment {
            out += segment(0xFE, Array("COMMENT-SECRET".utf8))
        }
        out += segment(0xDB, [0x00] + [UInt8](repeating: 1, count: 64))
        out += segment(0xC0, [8] + be16(height) + be16(width) + [1, 1, 0x11, 0])
        out += segment(0xC4, [0x00] + dcBits + dcValues)
        out += segment(0xC4, [0x10] + acBits + acValues)
        if let restartInterval { out += segment(0xDD, be16(restartInterval)) }
        out += segment(0xDA, [1, 1, 0x00, 0, 63, 0])
        out += scanData(blocks: ((width + 7) / 8) * ((height + 7) / 8), restartInterval: restartInterval)
        out += [0xFF, 0xD9]
        return out
    }

    static func segment(_ marker: UInt8, _ payload: [UInt8]) -> [UInt8] {
        [0xFF, marker] + be16(payload.count + 2) + payload
    }

    /// Six bits a block, "00" (DC difference 0) then "1010" (EOB), padded with 1-bits and
    /// byte-stuffed; with a restart interval, RSTn markers between intervals.
    static func scanData(blocks: Int, restartInterval: Int? = nil) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(blocks * 6 / 8 + 2)
        var accumulator = 0
        var bits = 0
        func put(_ byte: UInt8) {
            out.append(byte)
            if byte == 0xFF { out.append(0x00) }
        }
        func pad() {
            if bits > 0 {
                put(UInt8(((accumulator << (8 - bits)) | ((1 << (8 - bits)) - 1)) & 0xFF))
            }
            (accumulator, bits) = (0, 0)
        }
        for block in 0..<blocks {
            if let restartInterval, block > 0, block % restartInterval == 0 {
                pad()
                out += [0xFF, 0xD0 + UInt8(block / restartInterval - 1) % 8]
            }
            accumulator = (accumulator << 6) | 0b00_1010
            bits += 6
            while bits >= 8 {
                bits -= 8
                put(UInt8((accumulator >> bits) & 0xFF))
            }
            accumulator &= (1 << bits) - 1
        }
        pad()
        return out
    }

    // The standard luminance tables of ITU T.81 Annex K.
    static let dcBits: [UInt8] = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    static let dcValues: [UInt8] = Array(0...11)
    static let acBits: [UInt8] = [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7D]
    static let acValues: [UInt8] = [
        0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07,
        0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xA1, 0x08, 0x23, 0x42, 0xB1, 0xC1, 0x15, 0x52, 0xD1, 0xF0,
        0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0A, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x25, 0x26, 0x27, 0x28,
        0x29, 0x2A, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3A, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
        0x4A, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
        0x6A, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7A, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
        0x8A, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7,
        0xA8, 0xA9, 0xAA, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xC2, 0xC3, 0xC4, 0xC5,
        0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8, 0xD9, 0xDA, 0xE1, 0xE2,
        0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xEA, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8,
        0xF9, 0xFA,
    ]

    static let xmpPacket = Array(
        """
        <?xpacket begin="" id="W5M0MpCehiHzreSzNTczkc9d"?><x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF \
        xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description xmlns:exif="http://ns.adobe.com/exif/1.0/" xmlns:xmp="http://ns.adobe.com/xap/1.0/" \
        exif:GPSLatitude="51,30.4417N" exif:GPSLongitude="0,7.5E" xmp:CreatorTool="XMP-SECRET"/></rdf:RDF></x:xmpmeta>\
        <?xpacket end="w"?>
        """.utf8)

    /// A TIFF structure as EXIF holds it: IFD0 with Make, Model, the Orientation if given and
    /// pointers to an Exif IFD (holding a MakerNote) and a GPS IFD.
    static func exifTIFF(orientation: Int? = nil, gps: Bool = false, makerNote: Bool = false, bigEndian: Bool = false) -> [UInt8] {
        typealias Entry = (tag: UInt16, type: UInt16, count: Int, value: [UInt8])
        let w16 = { (v: Int) -> [UInt8] in bigEndian ? be16(v) : le16(v) }
        let w32 = { (v: Int) -> [UInt8] in bigEndian ? be32(v) : le32(v) }
        func size(_ entries: [Entry]) -> Int {
            2 + 12 * entries.count + 4 + entries.reduce(0) { $0 + ($1.value.count > 4 ? ($1.value.count + 1) & ~1 : 0) }
        }
        func ifd(_ entries: [Entry], at offset: Int) -> [UInt8] {
            var head = w16(entries.count)
            var data: [UInt8] = []
            let dataStart = offset + 2 + 12 * entries.count + 4
            for entry in entries {
                head += w16(Int(entry.tag)) + w16(Int(entry.type)) + w32(entry.count)
                if entry.value.count <= 4 {
                    head += entry.value + [UInt8](repeating: 0, count: 4 - entry.value.count)
                } else {
                    head += w32(dataStart + data.count)
                    data += entry.value
                    if data.count & 1 == 1 { data.append(0) }
                }
            }
            return head + w32(0) + data
        }
        let ascii = { (s: String) -> Entry in (0, 2, s.utf8.count + 1, Array(s.utf8) + [0]) }
        var make = ascii("TestCam")
        make.tag = 0x010F
        var model = ascii("Phone 1")
        model.tag = 0x0110
        let rational = { (n: Int, d: Int) -> [UInt8] in w32(n) + w32(d) }
        let gpsEntries: [Entry] = [
            (0x0000, 1, 4, [2, 3, 0, 0]),
            (0x0001, 2, 2, Array("N\0".utf8)),
            (0x0002, 5, 3, rational(Int(latitudeMarker), 1) + rational(30, 1) + rational(2644, 100)),
            (0x0003, 2, 2, Array("E\0".utf8)),
            (0x0004, 5, 3, rational(Int(latitudeMarker) + 1, 1) + rational(7, 1) + rational(3000, 100)),
        ]
        let exifEntries: [Entry] = [(0x927C, 7, 24, Array("MAKERNOTE-SECRET-SERIAL1".utf8))]

        func ifd0Entries(exifAt: Int, gpsAt: Int) -> [Entry] {
            var entries = [make, model]
            if let orientation { entries.append((0x0112, 3, 1, w16(orientation))) }
            if makerNote { entries.append((0x8769, 4, 1, w32(exifAt))) }
            if gps { entries.append((0x8825, 4, 1, w32(gpsAt))) }
            return entries
        }
        let exifAt = 8 + size(ifd0Entries(exifAt: 0, gpsAt: 0))
        let gpsAt = exifAt + (makerNote ? size(exifEntries) : 0)
        var out: [UInt8] = (bigEndian ? Array("MM".utf8) : Array("II".utf8)) + w16(42) + w32(8)
        out += ifd(ifd0Entries(exifAt: exifAt, gpsAt: gpsAt), at: 8)
        if makerNote { out += ifd(exifEntries, at: exifAt) }
        if gps { out += ifd(gpsEntries, at: gpsAt) }
        return out
    }

    // MARK: PNG

    /// An 8-bit grayscale PNG (mid grey) with gAMA and pHYs, and if asked the text chunks
    /// (tEXt, zTXt, iTXt with XMP), an eXIf with GPS and a tIME.
    static func png(width: Int = 4, height: Int = 3, text: Bool = false, exif: Bool = false, time: Bool = false) -> [UInt8] {
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        out += pngChunk("IHDR", be32(width) + be32(height) + [8, 0, 0, 0, 0])
        out += pngChunk("gAMA", be32(45455))
        if exif { out += pngChunk("eXIf", exifTIFF(orientation: 1, gps: true, makerNote: true, bigEndian: true)) }
        if text {
            out += pngChunk("tEXt", Array("Comment\0TEXT-SECRET".utf8))
            out += pngChunk("zTXt", Array("Author\0".utf8) + [0] + zlibStored(Array("ZTXT-SECRET".utf8)))
            out += pngChunk("iTXt", Array("XML:com.adobe.xmp\0\0\0\0\0".utf8) + xmpPacket + Array(" ITXT-SECRET".utf8))
        }
        if time { out += pngChunk("tIME", be16(2024) + [6, 1, 12, 30, 15]) }
        out += pngChunk("pHYs", be32(2835) + be32(2835) + [1])
        var rows: [UInt8] = []
        rows.reserveCapacity((width + 1) * height)
        for _ in 0..<height { rows += [0] + [UInt8](repeating: 0x80, count: width) }
        out += pngChunk("IDAT", zlibStored(rows))
        out += pngChunk("IEND", [])
        return out
    }

    static func pngChunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typeAndData = Array(type.utf8) + data
        return be32(data.count) + typeAndData + be32(Int(crc32(typeAndData)))
    }

    /// A zlib stream of stored (uncompressed) deflate blocks.
    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var start = 0
        repeat {
            let end = min(start + 65_535, data.count)
            let length = end - start
            out += [end == data.count ? 1 : 0] + le16(length) + le16(length ^ 0xFFFF)
            out += data[start..<end]
            start = end
        } while start < data.count
        var (a, b): (UInt32, UInt32) = (1, 0)
        for byte in data {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return out + be32(Int(b << 16 | a))
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    // MARK: WebP

    /// An extended WebP (VP8X) holding a lossless image, with if asked an ICC profile before
    /// it and EXIF and XMP chunks after it (both odd-sized, so both padded).
    static func webp(width: Int = 4, height: Int = 3, exif: Bool = false, xmp: Bool = false, icc: Bool = false) -> [UInt8] {
        var flags: UInt8 = 0x10  // alpha: the lossless image has an alpha channel
        if icc { flags |= 0x20 }
        if exif { flags |= 0x08 }
        if xmp { flags |= 0x04 }
        var chunks = riffChunk("VP8X", [flags, 0, 0, 0] + Array(le32(width - 1).prefix(3)) + Array(le32(height - 1).prefix(3)))
        if icc { chunks += riffChunk("ICCP", iccProfile) }
        chunks += riffChunk("VP8L", vp8l(width: width, height: height))
        let odd = { (data: [UInt8]) -> [UInt8] in data.count & 1 == 1 ? data : data + [0x20] }
        if exif { chunks += riffChunk("EXIF", odd(exifTIFF(orientation: 6, gps: true, makerNote: true))) }
        if xmp { chunks += riffChunk("XMP ", odd(xmpPacket)) }
        return riff(chunks)
    }

    /// A simple lossy WebP: one VP8 key frame (its partitions are zeros; only the header matters here).
    static func webpLossy(width: Int = 4, height: Int = 3) -> [UInt8] {
        let partition = [UInt8](repeating: 0, count: 16)
        let size = partition.count
        // Frame tag: key frame (bit 0 clear), version 0, shown (bit 4), first partition size in the top 19 bits.
        let tag = 0x10 | size << 5
        let header: [UInt8] = [UInt8(tag & 0xFF), UInt8(tag >> 8 & 0xFF), UInt8(tag >> 16 & 0xFF), 0x9D, 0x01, 0x2A]
        return riff(riffChunk("VP8 ", header + le16(width) + le16(height) + partition + partition))
    }

    /// A simple lossless WebP.
    static func webpLossless(width: Int = 4, height: Int = 3) -> [UInt8] {
        riff(riffChunk("VP8L", vp8l(width: width, height: height)))
    }

    /// A VP8L bitstream for an opaque black picture: no transforms, no colour cache, no meta
    /// prefix codes, and five one-symbol prefix codes, so each pixel takes zero bits.
    static func vp8l(width: Int, height: Int) -> [UInt8] {
        let header = (width - 1) | (height - 1) << 14 | 1 << 28  // alpha used; version 0
        var bits: [Int] = [0, 0, 0]  // transform, colour cache, meta prefix codes: none
        let zeroSymbol = [1, 0, 0, 0]  // simple code, one symbol, 1-bit symbol, 0
        bits += zeroSymbol + zeroSymbol + zeroSymbol  // green, red, blue: 0
        bits += [1, 0, 1] + [1, 1, 1, 1, 1, 1, 1, 1]  // alpha: 8-bit symbol 255
        bits += zeroSymbol  // distance
        var body = [UInt8](repeating: 0, count: (bits.count + 7) / 8)
        for (index, bit) in bits.enumerated() where bit == 1 { body[index / 8] |= 1 << (index % 8) }
        return [0x2F] + le32(header) + body
    }

    static func riffChunk(_ fourCC: String, _ data: [UInt8]) -> [UInt8] {
        Array(fourCC.utf8) + le32(data.count) + data + (data.count & 1 == 1 ? [0] : [])
    }

    static func riff(_ chunks: [UInt8]) -> [UInt8] {
        Array("RIFF".utf8) + le32(chunks.count + 4) + Array("WEBP".utf8) + chunks
    }

    // MARK: Others

    /// The start of an iPhone photo: an ISO-BMFF `ftyp` box of brand heic.
    static func heic() -> [UInt8] {
        be32(24) + Array("ftypheic".utf8) + be32(0) + Array("mif1heic".utf8) + be32(8) + Array("meta".utf8) + [UInt8](repeating: 0, count: 64)
    }

    static func gif() -> [UInt8] {
        Array("GIF89a".utf8) + le16(1) + le16(1) + [0, 0, 0, 0x3B]
    }

    // MARK: Reading

    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        contains(haystack, Array(needle.utf8))
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return needle.isEmpty }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start] == needle[0] && haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    /// The JPEG's segments from after SOI up to and including the first SOS, fill bytes skipped.
    static func jpegSegments(_ jpeg: [UInt8]) -> [(marker: UInt8, payload: [UInt8])] {
        var segments: [(marker: UInt8, payload: [UInt8])] = []
        var index = 2
        while index + 1 < jpeg.count, jpeg[index] == 0xFF {
            while index + 1 < jpeg.count, jpeg[index + 1] == 0xFF { index += 1 }
            let marker = jpeg[index + 1]
            guard index + 3 < jpeg.count else { break }
            let length = Int(jpeg[index + 2]) << 8 | Int(jpeg[index + 3])
            guard length >= 2, index + 2 + length <= jpeg.count else { break }
            segments.append((marker, Array(jpeg[(index + 4)..<(index + 2 + length)])))
            if marker == 0xDA { break }
            index += 2 + length
        }
        return segments
    }

    /// IFD0 of the JPEG's first EXIF block: tag → its SHORT value, or 0 for other types.
    /// nil when there is no EXIF block or it cannot be read.
    static func exifTags(inJPEG jpeg: [UInt8]) -> [UInt16: Int]? {
        guard let payload = jpegSegments(jpeg).first(where: { $0.marker == 0xE1 && $0.payload.starts(with: Array("Exif\0\0".utf8)) })?.payload
        else { return nil }
        return ifd0Tags(Array(payload.dropFirst(6)))
    }

    static func ifd0Tags(_ tiff: [UInt8]) -> [UInt16: Int]? {
        guard tiff.count >= 8 else { return nil }
        let big: Bool
        switch (tiff[0], tiff[1]) {
        case (0x49, 0x49): big = false
        case (0x4D, 0x4D): big = true
        default: return nil
        }
        func u16(_ at: Int) -> Int? {
            guard at >= 0, at + 2 <= tiff.count else { return nil }
            return big ? Int(tiff[at]) << 8 | Int(tiff[at + 1]) : Int(tiff[at + 1]) << 8 | Int(tiff[at])
        }
        func u32(_ at: Int) -> Int? {
            guard let a = u16(at), let b = u16(at + 2) else { return nil }
            return big ? a << 16 | b : b << 16 | a
        }
        guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return nil }
        var tags: [UInt16: Int] = [:]
        for entry in 0..<count {
            let at = ifd + 2 + 12 * entry
            guard let tag = u16(at), let type = u16(at + 2), let value = u16(at + 8) else { return nil }
            tags[UInt16(tag)] = type == 3 ? value : 0
        }
        return tags
    }

    static func pngChunkTypes(_ png: [UInt8]) -> [String] {
        pngChunks(png).map(\.type)
    }

    /// Each chunk's type and its whole bytes (length, type, data, CRC).
    static func pngChunks(_ png: [UInt8]) -> [(type: String, bytes: [UInt8])] {
        var chunks: [(type: String, bytes: [UInt8])] = []
        var index = 8
        while index + 8 <= png.count {
            let length = Int(be32Read(png, index))
            guard index + 12 + length <= png.count else { break }
            chunks.append((String(decoding: png[(index + 4)..<(index + 8)], as: UTF8.self), Array(png[index..<(index + 12 + length)])))
            index += 12 + length
        }
        return chunks
    }

    static func webpChunkTypes(_ webp: [UInt8]) -> [String] {
        webpChunks(webp).map(\.fourCC)
    }

    /// Each chunk's FourCC and data (without its pad byte).
    static func webpChunks(_ webp: [UInt8]) -> [(fourCC: String, data: [UInt8])] {
        var chunks: [(fourCC: String, data: [UInt8])] = []
        var index = 12
        while index + 8 <= webp.count {
            let length = Int(le32Read(webp, index + 4))
            guard index + 8 + length <= webp.count else { break }
            chunks.append((String(decoding: webp[index..<(index + 4)], as: UTF8.self), Array(webp[(index + 8)..<(index + 8 + length)])))
            index += 8 + length + (length & 1)
        }
        return chunks
    }

    // MARK: Bytes

    static func be16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
    static func be32(_ v: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8(v >> $0 & 0xFF) } }
    static func le32(_ v: Int) -> [UInt8] { [0, 8, 16, 24].map { UInt8(v >> $0 & 0xFF) } }
    static func be32Read(_ b: [UInt8], _ i: Int) -> UInt32 { (0..<4).reduce(0) { $0 << 8 | UInt32(b[i + $1]) } }
    static func le32Read(_ b: [UInt8], _ i: Int) -> UInt32 { (0..<4).reduce(0) { $0 << 8 | UInt32(b[i + 3 - $1]) } }
}
