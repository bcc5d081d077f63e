import DiaryKit
import Foundation
import Testing

/// The server's timestamps (six fractional digits) read and written without loss.
@Suite("Dates")
struct DateTranscoderTests {
    @Test("microseconds are kept both ways; other precisions and offsets are read")
    func microseconds() throws {
        let transcoder = MicrosecondDateTranscoder()
        let date = try transcoder.decode("2026-11-20T09:15:02.123456Z")
        #expect(try transcoder.encode(date) == "2026-11-20T09:15:02.123456Z")
        #expect(try transcoder.decode("2026-11-20T09:15:02Z") == transcoder.decode("2026-11-20T09:15:02.000000Z"))
        #expect(try transcoder.decode("2026-11-20T09:15:02.5Z").timeIntervalSince(transcoder.decode("2026-11-20T09:15:02Z")) == 0.5)
        #expect(try transcoder.decode("2026-11-20T18:15:02.123456+09:00") == date)
        #expect(throws: (any Error).self) { try transcoder.decode("2026-11-20 09:15:02") }
        #expect(throws: (any Error).self) { try transcoder.decode("2026-11-20T09:15:02.Z") }
    }
}
