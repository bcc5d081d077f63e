import Testing
@testable import DiaryHTTP

/// The photo download's own header reading, without a server: `Range` and `If-None-Match`.
@Suite("Photo response headers")
struct PhotoResponseTests {
    @Test("a Range whose last byte is past Int's end is the rest of the photo, not a crash (fuzz finding)")
    func rangeEndAtIntMax() {
        #expect(PhotoResponse.byteRange("bytes=0-9223372036854775807", size: 100) == .part(0..<100))
        #expect(PhotoResponse.byteRange("bytes=99-9223372036854775807", size: 100) == .part(99..<100))
        #expect(PhotoResponse.byteRange("bytes=100-9223372036854775807", size: 100) == .unsatisfiable)
        #expect(PhotoResponse.byteRange("bytes=0-9223372036854775808", size: 100) == .whole)
    }

    @Test("a Range's last byte is capped at the photo's")
    func rangeCapped() {
        #expect(PhotoResponse.byteRange("bytes=2-9", size: 100) == .part(2..<10))
        #expect(PhotoResponse.byteRange("bytes=2-500", size: 100) == .part(2..<100))
    }
}
