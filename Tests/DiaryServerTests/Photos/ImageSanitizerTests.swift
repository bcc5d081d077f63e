import Testing
import TestSupport
@testable import DiaryCore

/// What the server stores of an uploaded photo: the declared format confirmed by its magic
/// bytes, its size read, every block that can hold a place or a device removed, and the
/// JPEG orientation kept; and no input, however broken, crashes it.
@Suite("Image sanitizer")
struct ImageSanitizerTests {
    /// The rejection, or nil when the image is accepted.
    static func rejection(_ bytes: [UInt8], _ type: PhotoContentType) -> ImageRejection? {
        do { _ = try ImageSanitizer.sanitize(bytes, declaredAs: type) } catch { return error }
        return nil
    }

    static func isUnreadable(_ rejection: ImageRejection?) -> Bool {
        if case .unreadable = rejection { return true }
        return false
    }

    /// Where a JPEG built by `TestImages` has its first byte after the SOS header.
    static func endOfJPEGHeader(_ jpeg: [UInt8]) -> Int {
        TestImages.jpegSegments(jpeg).reduce(2) { $0 + 4 + $1.payload.count }
    }

    /// `segments` placed right after SOI.
    static func inserting(_ segments: [UInt8], afterSOI jpeg: [UInt8]) -> [UInt8] {
        Array(jpeg.prefix(2)) + segments + jpeg.dropFirst(2)
    }

    // MARK: JPEG

    @Test("a JPEG loses its GPS, camera, maker note, XMP, IPTC and comment, and keeps its orientation")
    func jpegMetadataStripped() throws {
        let original = TestImages.jpeg(width: 40, height: 24, orientation: 6, gps: true, xmp: true, makerNote: true, iptc: true, comment: true)
        let planted = ["TestCam", "Phone 1", "MAKERNOTE-SECRET", "exif:GPSLatitude", "http://ns.adobe.com/xap/1.0/", "XMP-SECRET", "Photoshop 3.0", "IPTC-SECRET", "COMMENT-SECRET"]
        for secret in planted {
            #expect(TestImages.contains(original, secret), "the sample lacks \(secret)")
        }
        let latitude = TestImages.le32(Int(TestImages.latitudeMarker))
        #expect(TestImages.contains(original, latitude))

        let image = try ImageSanitizer.sanitize(original, declaredAs: .jpeg)
        for secret in TestImages.secrets {
            #expect(!TestImages.contains(image.bytes, secret), "\(secret) survived")
        }
        #expect(!TestImages.contains(image.bytes, latitude))
        #expect(TestImages.exifTags(inJPEG: image.bytes) == [0x0112: 6])
        #expect(TestImages.jpegSegments(image.bytes).map(\.marker) == [0xE0, 0xE1, 0xDB, 0xC0, 0xC4, 0xC4, 0xDA])
        #expect(image == SanitizedImage(contentType: .jpeg, width: 40, height: 24, bytes: image.bytes, orientation: 6))
    }

    @Test("orientations 2–8 survive in an EXIF of one tag, right after SOI or JFIF", arguments: 2...8)
    func orientationKept(orientation: Int) throws {
        for jfif in [true, false] {
            let image = try ImageSanitizer.sanitize(TestImages.jpeg(orientation: orientation, gps: true, jfif: jfif), declaredAs: .jpeg)
            #expect(image.orientation == orientation)
            #expect(TestImages.exifTags(inJPEG: image.bytes) == [0x0112: orientation])
            let markers = TestImages.jpegSegments(image.bytes).map(\.marker)
            #expect(Array(markers.prefix(jfif ? 2 : 1)) == (jfif ? [0xE0, 0xE1] : [0xE1]))
            #expect(markers.filter { $0 == 0xE1 }.count == 1)
        }
    }

    @Test("a big-endian EXIF's orientation is read too")
    func bigEndianOrientation() throws {
        let original = TestImages.jpeg(orientation: 8, gps: true, makerNote: true, bigEndianEXIF: true)
        #expect(TestImages.exifTags(inJPEG: original)?[0x0112] == 8)
        let image = try ImageSanitizer.sanitize(original, declaredAs: .jpeg)
        #expect(image.orientation == 8)
        #expect(TestImages.exifTags(inJPEG: image.bytes) == [0x0112: 8])
        #expect(!TestImages.contains(image.bytes, "TestCam"))
    }

    @Test("an upright, unoriented or wrongly oriented JPEG gets no EXIF at all", arguments: [1, 0, 9, nil] as [Int?])
    func noOrientationNoEXIF(orientation: Int?) throws {
        let original = TestImages.jpeg(orientation: orientation, gps: true, makerNote: true, exif: true)
        #expect(TestImages.exifTags(inJPEG: original) != nil)
        let image = try ImageSanitizer.sanitize(original, declaredAs: .jpeg)
        #expect(image.orientation == nil)
        #expect(TestImages.exifTags(inJPEG: image.bytes) == nil)
        #expect(!TestImages.jpegSegments(image.bytes).contains { $0.marker == 0xE1 })
    }

    @Test("the compressed data is copied byte for byte")
    func scanUntouched() throws {
        let original = TestImages.jpeg(width: 100, height: 60, orientation: 3, gps: true, comment: true)
        let image = try ImageSanitizer.sanitize(original, declaredAs: .jpeg)
        let sos = Self.endOfJPEGHeader(original)
        #expect(image.bytes.suffix(original.count - sos) == original.suffix(original.count - sos))
        #expect(image.bytes.count < original.count)
    }

    @Test("restart markers inside the compressed data are data, not the end of it")
    func restartMarkers() throws {
        let original = TestImages.jpeg(width: 80, height: 16, orientation: 4, gps: true, restartInterval: 3)
        let sos = Self.endOfJPEGHeader(original)
        #expect(TestImages.contains(Array(original[sos...]), [0xFF, 0xD0]) && TestImages.contains(Array(original[sos...]), [0xFF, 0xD2]))
        let image = try ImageSanitizer.sanitize(original, declaredAs: .jpeg)
        #expect(image.bytes.suffix(original.count - sos) == original.suffix(original.count - sos))
        #expect(TestImages.jpegSegments(image.bytes).map(\.marker) == [0xE0, 0xE1, 0xDB, 0xC0, 0xC4, 0xC4, 0xDD, 0xDA])
    }

    @Test("ICC and Adobe blocks stay; MPF, JFXX, other APPn and comments go")
    func applicationSegmentsChosen() throws {
        let icc = TestImages.segment(0xE2, Array("ICC_PROFILE\0".utf8) + [1, 1] + TestImages.iccProfile)
        let adobe = TestImages.segment(0xEE, Array("Adobe".utf8) + [0, 100, 0, 0, 0, 0, 1])
        let dropped = [
            TestImages.segment(0xE2, Array("MPF\0MM\0*".utf8) + Array("MPF-SECRET".utf8)),
            TestImages.segment(0xE0, Array("JFXX\0\u{10}JFXX-SECRET".utf8)),
            TestImages.segment(0xE3, Array("APP3-SECRET".utf8)),
            TestImages.segment(0xEC, Array("Ducky APP12-SECRET".utf8)),
            TestImages.segment(0xEF, Array("APP15-SECRET".utf8)),
            TestImages.segment(0xE1, Array("Exif\0\0garbage EXIF-SECRET".utf8)),
        ]
        let original = Self.inserting(icc + dropped.joined() + adobe, afterSOI: TestImages.jpeg(jfif: false))
        let image = try ImageSanitizer.sanitize(original, declaredAs: .jpeg)
        let segments = TestImages.jpegSegments(image.bytes)
        #expect(segments.map(\.marker) == [0xE2, 0xEE, 0xDB, 0xC0, 0xC4, 0xC4, 0xDA])
        #expect(Array(segments[0].payload) == Array(icc.dropFirst(4)))
        #expect(Array(segments[1].payload) == Array(adobe.dropFirst(4)))
        for secret in ["MPF-SECRET", "JFXX-SECRET", "APP3-SECRET", "APP12-SECRET", "APP15-SECRET", "EXIF-SECRET"] {
            #expect(TestImages.contains(original, secret))
            #expect(!TestImages.contains(image.bytes, secret), "\(secret) survived")
        }
        let withICC = try ImageSanitizer.sanitize(TestImages.jpeg(orientation: 5, icc: true), declaredAs: .jpeg)
        #expect(TestImages.contains(withICC.bytes, TestImages.iccProfile))
    }

    @Test("a malformed EXIF is dropped, not a reason to refuse the photo")
    func malformedEXIF() throws {
        let tiff = TestImages.exifTIFF(orientation: 6)
        // Cut the EXIF at every length: the orientation survives only once its entry is whole.
        let orientationEntryEnd = 8 + 2 + 12 * 3
        for length in 0...tiff.count {
            let exif = TestImages.segment(0xE1, Array("Exif\0\0".utf8) + tiff.prefix(length))
            let image = try ImageSanitizer.sanitize(Self.inserting(exif, afterSOI: TestImages.jpeg()), declaredAs: .jpeg)
            #expect(image.orientation == (length >= orientationEntryEnd ? 6 : nil), "EXIF cut at \(length)")
        }
        // IFD0 pointing past the end, an entry count running past the end, a wrong type.
        var farIFD = tiff
        farIFD.replaceSubrange(4..<8, with: TestImages.le32(60_000))
        var longCount = tiff
        longCount.replaceSubrange(8..<10, with: TestImages.le16(0xFFFF))
        longCount.removeSubrange(46...)
        var longType = tiff
        longType.replaceSubrange((10 + 24 + 2)..<(10 + 24 + 4), with: TestImages.le16(4))
        for broken in [farIFD, longCount, longType, Array("MM\0*".utf8) + [0xFF, 0xFF, 0xFF, 0xFF]] {
            let exif = TestImages.segment(0xE1, Array("Exif\0\0".utf8) + broken)
            let image = try ImageSanitizer.sanitize(Self.inserting(exif, afterSOI: TestImages.jpeg()), declaredAs: .jpeg)
            #expect(image.orientation == nil)
            #expect(!TestImages.jpegSegments(image.bytes).contains { $0.marker == 0xE1 })
        }
    }

    @Test("an EXIF shorter than the lone-Orientation one gives no orientation, so the output is never larger (fuzz finding)")
    func exifShorterThanOurs() throws {
        // Orientation 6 as IFD0's one entry, without the next-IFD offset: 32 bytes with its marker, ours is 36.
        let tiff: [UInt8] = Array("MM\0*".utf8) + [0, 0, 0, 8, 0, 1] + [0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0]
        let upload = Self.inserting(TestImages.segment(0xE1, Array("Exif\0\0".utf8) + tiff), afterSOI: TestImages.jpeg(jfif: false))
        let image = try ImageSanitizer.sanitize(upload, declaredAs: .jpeg)
        #expect(image.bytes.count <= upload.count)
        #expect(image.orientation == nil)
        // With the offset it is a whole EXIF, as long as ours, and its orientation stays.
        let whole = Self.inserting(TestImages.segment(0xE1, Array("Exif\0\0".utf8) + tiff + [0, 0, 0, 0]), afterSOI: TestImages.jpeg(jfif: false))
        let kept = try ImageSanitizer.sanitize(whole, declaredAs: .jpeg)
        #expect(kept.orientation == 6)
        #expect(kept.bytes.count == whole.count)
    }

    @Test("fill bytes before markers are allowed and not kept")
    func fillBytes() throws {
        let plain = TestImages.jpeg(orientation: 2, comment: true)
        let header = Self.endOfJPEGHeader(plain)
        var padded: [UInt8] = [0xFF, 0xD8]
        var index = 2
        for (_, payload) in TestImages.jpegSegments(plain) {
            padded += [0xFF, 0xFF, 0xFF] + plain[index..<(index + 4 + payload.count)]
            index += 4 + payload.count
        }
        padded += plain[header...]
        #expect(padded.count == plain.count + 3 * TestImages.jpegSegments(plain).count)
        let image = try ImageSanitizer.sanitize(padded, declaredAs: .jpeg)
        #expect(image == (try ImageSanitizer.sanitize(plain, declaredAs: .jpeg)))
    }

    @Test("blocks between scans and anything after End Of Image go")
    func afterTheFirstScan() throws {
        let plain = TestImages.jpeg(width: 24, height: 24)
        // Even the application blocks kept before the first scan go after it: there they change nothing.
        let between = TestImages.segment(0xFE, Array("COMMENT-SECRET".utf8)) + TestImages.segment(0xE1, Array("Exif\0\0LATE-SECRET".utf8))
            + TestImages.segment(0xE2, Array("ICC_PROFILE\0".utf8) + [1, 1] + TestImages.iccProfile)
            + TestImages.segment(0xEE, Array("Adobe".utf8) + [0, 100, 0, 0, 0, 0, 1])
        let dht = TestImages.segment(0xC4, [0x00] + TestImages.dcBits + TestImages.dcValues)
        let trailer = Array("ftypmp42 MOTION-PHOTO-SECRET".utf8) + [0xFF, 0xD8, 0xFF, 0xE1]
        let original = Array(plain.dropLast(2)) + between + dht + [0xFF, 0xD9] + trailer
        let image = try ImageSanitizer.sanitize(original, declaredAs: .jpeg)
        #expect(image.bytes == Array(plain.dropLast(2)) + dht + [0xFF, 0xD9])
        #expect(image.orientation == nil)
    }

    @Test("a JPEG without a frame header, cut before its scan or with broken segments is unreadable")
    func brokenJPEGStructure() {
        let plain = TestImages.jpeg()
        let segments = TestImages.jpegSegments(plain)
        let withoutSOF = [0xFF, 0xD8] + segments.filter { $0.marker != 0xC0 }.flatMap { TestImages.segment($0.marker, $0.payload) }
            + TestImages.scanData(blocks: 2) + [0xFF, 0xD9]
        let zeroHeight = TestImages.jpeg(width: 8, height: 0)
        let zeroWidth = TestImages.jpeg(width: 0, height: 8)
        let overlong = [0xFF, 0xD8, 0xFF, 0xE0, 0x40, 0x00] + Array(plain.dropFirst(2))
        let noMarker = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x02, 0x12, 0x34] + Array(plain.dropFirst(2))
        let eoiFirst = [0xFF, 0xD8, 0xFF, 0xD9] + Array(plain.dropFirst(2))
        let twoFrames = Self.inserting(TestImages.segment(0xC2, [8, 0, 8, 0, 8, 1, 1, 0x11, 0]), afterSOI: plain)
        let shortFrame = Self.inserting(TestImages.segment(0xC1, [8, 0, 8]), afterSOI: plain)
        let headerOnly = Array(plain.prefix(Self.endOfJPEGHeader(plain) - 10))
        for broken in [withoutSOF, zeroHeight, zeroWidth, overlong, noMarker, eoiFirst, twoFrames, shortFrame, headerOnly] {
            #expect(Self.isUnreadable(Self.rejection(broken, .jpeg)), "\(Self.rejection(broken, .jpeg).map { "\($0)" } ?? "accepted")")
        }
    }

    // MARK: PNG

    @Test("a PNG loses its text, EXIF and time chunks; the others stay byte for byte")
    func pngChunksStripped() throws {
        let original = TestImages.png(width: 7, height: 5, text: true, exif: true, time: true)
        #expect(TestImages.pngChunkTypes(original) == ["IHDR", "gAMA", "eXIf", "tEXt", "zTXt", "iTXt", "tIME", "pHYs", "IDAT", "IEND"])
        let image = try ImageSanitizer.sanitize(original + Array("after IEND TEXT-SECRET".utf8), declaredAs: .png)
        #expect(TestImages.pngChunkTypes(image.bytes) == ["IHDR", "gAMA", "pHYs", "IDAT", "IEND"])
        let kept = TestImages.pngChunks(original).filter { ["IHDR", "gAMA", "pHYs", "IDAT", "IEND"].contains($0.type) }
        #expect(image.bytes == Array(original.prefix(8)) + kept.flatMap(\.bytes))
        for secret in TestImages.secrets {
            #expect(!TestImages.contains(image.bytes, secret), "\(secret) survived")
        }
        #expect(TestImages.contains(original, "ZTXT-SECRET") && TestImages.contains(original, "MAKERNOTE-SECRET"))
        #expect((image.width, image.height, image.orientation) == (7, 5, nil))
    }

    @Test("a PNG without IHDR first, without IEND, or with a lying length is unreadable")
    func brokenPNGStructure() {
        let plain = TestImages.png()
        let chunks = TestImages.pngChunks(plain)
        let signature = Array(plain.prefix(8))
        let gamaFirst = signature + chunks[1].bytes + chunks[0].bytes + chunks[2...].flatMap(\.bytes)
        let lookalikeFirst = signature + TestImages.pngChunk("abCd", Array(chunks[0].bytes[8..<21])) + chunks[1...].flatMap(\.bytes)
        let noIEND = Array(plain.dropLast(12))
        let twoIHDR = signature + chunks[0].bytes + chunks.flatMap(\.bytes)
        var huge = plain
        huge.replaceSubrange(8 + 25 + 0..<8 + 25 + 4, with: [0x7F, 0xFF, 0xFF, 0xF0])
        var beyond31Bits = plain
        beyond31Bits.replaceSubrange(8 + 25 + 0..<8 + 25 + 4, with: [0xFF, 0xFF, 0xFF, 0xF0])
        var badType = plain
        badType[8 + 25 + 4] = 0x20
        let shortIHDR = signature + TestImages.pngChunk("IHDR", Array(repeating: 1, count: 12)) + chunks[1...].flatMap(\.bytes)
        var wide = plain
        wide.replaceSubrange(16..<20, with: [0x80, 0, 0, 1])
        for broken in [gamaFirst, lookalikeFirst, noIEND, twoIHDR, huge, beyond31Bits, badType, shortIHDR, wide, TestImages.png(width: 0), TestImages.png(height: 0)] {
            #expect(Self.isUnreadable(Self.rejection(broken, .png)))
        }
    }

    // MARK: WebP

    @Test("a WebP loses its EXIF and XMP, VP8X stops announcing them, and the RIFF size is right")
    func webpChunksStripped() throws {
        let original = TestImages.webp(width: 30, height: 20, exif: true, xmp: true, icc: true)
        #expect(TestImages.webpChunkTypes(original) == ["VP8X", "ICCP", "VP8L", "EXIF", "XMP "])
        let image = try ImageSanitizer.sanitize(original + Array("beyond RIFF".utf8), declaredAs: .webp)
        let chunks = TestImages.webpChunks(image.bytes)
        #expect(chunks.map(\.fourCC) == ["VP8X", "ICCP", "VP8L"])
        #expect(chunks[0].data[0] == 0x30)
        #expect(Array(chunks[0].data[1...]) == Array(TestImages.webpChunks(original)[0].data[1...]))
        #expect(chunks[1].data == TestImages.iccProfile && chunks[2].data == TestImages.webpChunks(original)[2].data)
        #expect(Int(TestImages.le32Read(image.bytes, 4)) == image.bytes.count - 8)
        #expect(image.bytes.count == 12 + chunks.reduce(0) { $0 + 8 + $1.data.count + ($1.data.count & 1) })
        for secret in TestImages.secrets {
            #expect(!TestImages.contains(image.bytes, secret), "\(secret) survived")
        }
        #expect((image.width, image.height) == (30, 20))
    }

    @Test("odd-sized chunks are skipped with their pad byte, and a missing last pad is forgiven")
    func webpPadding() throws {
        let vp8x = TestImages.riffChunk("VP8X", [0x0C, 0, 0, 0, 3, 0, 0, 2, 0, 0])
        let exif = TestImages.riffChunk("EXIF", Array("Exif odd length TestCam".utf8))
        let xmp = TestImages.riffChunk("XMP ", Array("<x>XMP-SECRET</x>".utf8))
        let unknown = Array(TestImages.riffChunk("ZZZZ", [1, 2, 3]).dropLast())
        let image = try ImageSanitizer.sanitize(TestImages.riff(vp8x + exif + xmp + unknown), declaredAs: .webp)
        #expect(TestImages.webpChunks(image.bytes).map(\.fourCC) == ["VP8X", "ZZZZ"])
        #expect(TestImages.webpChunks(image.bytes)[0].data[0] == 0)
        #expect(TestImages.webpChunks(image.bytes)[1].data == [1, 2, 3])
        #expect(image.bytes.count == 12 + 18 + 12)
        #expect((image.width, image.height) == (4, 3))
    }

    @Test("a WebP with a lying RIFF or chunk size, or without an image chunk first, is unreadable")
    func brokenWebPStructure() {
        let plain = TestImages.webp(exif: true)
        var longRIFF = plain
        longRIFF.replaceSubrange(4..<8, with: TestImages.le32(plain.count))
        var longChunk = plain
        longChunk.replaceSubrange(16..<20, with: TestImages.le32(0xFFFF_FFF0))
        let exifFirst = TestImages.riff(TestImages.riffChunk("EXIF", [1, 2]) + TestImages.webpChunks(plain).flatMap { TestImages.riffChunk($0.fourCC, $0.data) })
        let twoVP8X = TestImages.riff(TestImages.riffChunk("VP8X", Array(repeating: 0, count: 10)) + TestImages.riffChunk("VP8X", []))
        var notKeyFrame = TestImages.webpLossy()
        notKeyFrame[20] |= 1
        var badSignature = TestImages.webpLossless()
        badSignature[20] = 0x2E
        let empty = TestImages.riff([])
        for broken in [longRIFF, longChunk, exifFirst, twoVP8X, notKeyFrame, badSignature, empty] {
            #expect(Self.isUnreadable(Self.rejection(broken, .webp)))
        }
    }

    // MARK: All formats

    static let builders: [(String, PhotoContentType, @Sendable (Int, Int) -> [UInt8])] = [
        ("JPEG", .jpeg, { TestImages.jpeg(width: $0, height: $1) }),
        ("PNG", .png, { TestImages.png(width: $0, height: $1) }),
        ("WebP VP8X", .webp, { TestImages.webp(width: $0, height: $1) }),
        ("WebP VP8", .webp, { TestImages.webpLossy(width: $0, height: $1) }),
        ("WebP VP8L", .webp, { TestImages.webpLossless(width: $0, height: $1) }),
    ]

    /// One of each kind, with every metadata block the builders can add.
    static let samples: [(PhotoContentType, [UInt8])] = [
            (.jpeg, TestImages.jpeg(orientation: 6, gps: true, xmp: true, makerNote: true, iptc: true, comment: true, icc: true)),
            (.png, TestImages.png(text: true, exif: true, time: true)),
            (.webp, TestImages.webp(exif: true, xmp: true, icc: true)),
            (.webp, TestImages.webpLossy()),
            (.webp, TestImages.webpLossless()),
        ]

    @Test("the size comes from each format's header", arguments: [(1, 1), (17, 9), (640, 480), (3000, 2), (2, 3000)])
    func dimensions(width: Int, height: Int) throws {
        for (name, type, build) in Self.builders {
            let image = try ImageSanitizer.sanitize(build(width, height), declaredAs: type)
            #expect((image.width, image.height, image.contentType) == (width, height, type), "\(name)")
        }
    }

    @Test("12,000 pixels a side is accepted, 12,001 is too large")
    func maximumSide() throws {
        for (name, type, build) in Self.builders {
            #expect(Self.rejection(build(12_000, 1), type) == nil, "\(name)")
            #expect(Self.rejection(build(1, 12_000), type) == nil, "\(name)")
            #expect(Self.rejection(build(12_001, 1), type) == .tooLarge(width: 12_001, height: 1), "\(name)")
            #expect(Self.rejection(build(3, 12_001), type) == .tooLarge(width: 3, height: 12_001), "\(name)")
        }
        #expect(Self.rejection(TestImages.webp(width: 1 << 24, height: 1), .webp) == .tooLarge(width: 1 << 24, height: 1))
    }

    @Test("the magic bytes must be the declared format")
    func declaredType() {
        let samples: [(PhotoContentType?, [UInt8])] = [
            (.jpeg, TestImages.jpeg()), (.png, TestImages.png()), (.webp, TestImages.webp()), (.webp, TestImages.webpLossy()),
            (nil, TestImages.heic()), (nil, TestImages.gif()), (nil, []), (nil, Array("RIFF\0\0\0\0WAVEfmt ".utf8)), (nil, [0xFF, 0xD8]),
        ]
        for (actual, bytes) in samples {
            #expect(ImageSanitizer.sniff(bytes[...]) == actual)
            #expect(ImageSanitizer.sniff(([0] + bytes)[1...]) == actual, "a slice not starting at 0")
            for declared in PhotoContentType.allCases where declared != actual {
                #expect(Self.rejection(bytes, declared) == .notDeclaredType, "\(actual.map(\.rawValue) ?? "other") declared \(declared)")
            }
        }
        #expect(Self.rejection(TestImages.png(), .jpeg) == .notDeclaredType)
        #expect(Self.rejection(TestImages.heic(), .jpeg) == .notDeclaredType)
    }

    @Test("every cut of a header is refused, never a crash")
    func truncated() {
        for (type, bytes) in Self.samples {
            // A JPEG cut inside its compressed data still shows; PNG and WebP need every byte up to their end.
            let mustRefuse = type == .jpeg ? Self.endOfJPEGHeader(bytes) : bytes.count
            for length in 0..<bytes.count {
                let rejection = Self.rejection(Array(bytes.prefix(length)), type)
                if length < mustRefuse {
                    #expect(rejection == .notDeclaredType || Self.isUnreadable(rejection), "\(type) cut at \(length): \(String(describing: rejection))")
                } else {
                    #expect(rejection == nil, "\(type) cut at \(length) in its scan")
                }
            }
        }
    }

    @Test("random and mutated bytes never crash, and what is accepted sanitises to itself")
    func fuzz() throws {
        var random = SplitMix64(seed: 0x5EC2_E7A7)
        let magics: [[UInt8]] = [[], [0xFF, 0xD8, 0xFF], [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A], Array("RIFF".utf8)]
        var accepted = 0
        for round in 0..<6000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                let (_, sample) = Self.samples[Int.random(in: 0..<Self.samples.count, using: &random)]
                bytes = sample
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    let at = Int.random(in: 0..<bytes.count, using: &random)
                    bytes[at] = [0x00, 0xFF, 0x7F, 0x80, UInt8.random(in: 0...255, using: &random)][Int.random(in: 0..<5, using: &random)]
                }
            } else {
                let magic = magics[round / 2 % magics.count]
                bytes = magic + (0..<Int.random(in: 0...200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
                if magic.first == 0x52, bytes.count >= 12 { bytes.replaceSubrange(8..<12, with: Array("WEBP".utf8)) }
            }
            for type in PhotoContentType.allCases {
                guard let image = try? ImageSanitizer.sanitize(bytes, declaredAs: type) else { continue }
                accepted += 1
                #expect((1...ImageSanitizer.maximumSide).contains(image.width) && (1...ImageSanitizer.maximumSide).contains(image.height))
                #expect((try? ImageSanitizer.sanitize(image.bytes, declaredAs: type)) == image, "round \(round) \(type)")
            }
        }
        #expect(accepted > 100)
    }

    @Test("every sample sanitises to itself a second time", arguments: 0..<5)
    func idempotent(index: Int) throws {
        let (type, bytes) = Self.samples[index]
        let once = try ImageSanitizer.sanitize(bytes, declaredAs: type)
        #expect(once.bytes != bytes || index >= 3)
        #expect(try ImageSanitizer.sanitize(once.bytes, declaredAs: type) == once)
    }
}
