import Foundation
@testable import DiaryCore
@testable import DiaryHTTP

extension FuzzTarget {
    /// The request headers read by hand: the first byte picks `Range` (with the next three
    /// giving the photo's size), `If-None-Match`, `Content-Type` or `X-App-Version`, the rest
    /// is its value. A value is read into something that, written again, reads the same, or it
    /// is refused as the routes document (416, 415, 426) or ignored as RFC 9110 allows.
    static func checkHeader(_ bytes: [UInt8]) throws(PropertyViolation) {
        var input = FuzzInput(bytes)
        let selector = input.byte() % 4
        let size = selector == 0 ? input.take(3).reduce(0) { $0 << 8 | Int($1) } : 0
        let value = String(decoding: input.rest(), as: UTF8.self)
        switch selector {
        case 0: try checkRange(value, size: size)
        case 1: try checkIfNoneMatch(value)
        case 2: try checkContentType(value)
        default: try checkAppVersion(value)
        }
    }

    static func checkRange(_ header: String, size: Int) throws(PropertyViolation) {
        guard case .part(let range) = PhotoResponse.byteRange(header, size: size) else { return }
        try require(!range.isEmpty && range.lowerBound >= 0 && range.upperBound <= size, "Range \(header) gives \(range) of \(size) bytes")
        let again = "bytes=\(range.lowerBound)-\(range.upperBound - 1)"
        try require(PhotoResponse.byteRange(again, size: size) == .part(range), "Range \(header) gives \(range), which \(again) does not")
    }

    static func checkIfNoneMatch(_ header: String) throws(PropertyViolation) {
        let etag = "\"0123abcd\""
        let matched = PhotoResponse.matches(header, etag: etag)
        let tags = header.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        try require(matched == tags.contains { $0 == "*" || $0 == etag || $0 == "W/" + etag }, "If-None-Match \(header) matches \(matched)")
        try require(PhotoResponse.matches(tags.joined(separator: ", "), etag: etag) == matched, "If-None-Match \(header) changes its answer when written again")
    }

    static func checkContentType(_ header: String) throws(PropertyViolation) {
        let essence = MediaType.essence(of: header)
        try require(MediaType.essence(of: essence) == essence, "the media type \(essence) of \(header) is not its own essence")
        try require(APIRequestDecoder.isJSON(essence) == APIRequestDecoder.isJSON(header), "\(header) and its essence \(essence) disagree on JSON")
        if let type = try? PhotoRoutes.declaredType(header) {
            try require((try? PhotoRoutes.declaredType(type.rawValue)) == type, "\(header) declares \(type), which its own name does not")
        }
    }

    static func checkAppVersion(_ header: String) throws(PropertyViolation) {
        guard let version = AppVersion(header) else { return }
        try require(version.parts.count == 3, "X-App-Version \(header) reads as \(version.parts.count) parts")
        try require(AppVersion(version.description)?.parts == version.parts, "X-App-Version \(header) reads as \(version), which does not read back")
    }
}
