import DiaryCore
import Foundation
import Hummingbird

/// A photo's bytes as HTTP caches expect them: an ETag of the content hash (304 for
/// If-None-Match), a private max-age no longer than the URL lives, and one byte range at
/// a time (206, or 416 for a range outside the photo). The body streams from the store.
struct PhotoResponse {
    let file: PhotoDownloads.File
    let downloads: PhotoDownloads

    var etag: String { "\"\(file.hash)\"" }

    func response(to request: Request) async throws -> Response {
        var headers: HTTPFields = [
            .eTag: etag,
            .cacheControl: "private, max-age=\(file.secondsLeft)",
            .acceptRanges: "bytes",
        ]
        if let match = request.headers[.ifNoneMatch], Self.matches(match, etag: etag) {
            return Response(status: .notModified, headers: headers)
        }
        headers[.contentType] = file.contentType
        headers[.xContentTypeOptions] = "nosniff"
        var status = HTTPResponse.Status.ok
        var byteRange = 0..<file.bytes
        if let header = request.headers[.range] {
            switch Self.byteRange(header, size: file.bytes) {
            case .whole: break
            case .part(let part):
                status = .partialContent
                byteRange = part
                headers[.contentRange] = "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(file.bytes)"
            case .unsatisfiable:
                headers[.contentRange] = "bytes */\(file.bytes)"
                return Response(status: .rangeNotSatisfiable, headers: headers)
            }
        }
        let bytes = try await downloads.open(file, range: byteRange)
        let body = ResponseBody(contentLength: byteRange.count) { writer in
            try await bytes.forEachChunk { chunk in try await writer.write(chunk) }
            try await writer.finish(nil)
        }
        return Response(status: status, headers: headers, body: body)
    }

    /// If-None-Match: `*`, or a list of entity tags compared weakly (RFC 9110 §13.1.2).
    static func matches(_ header: String, etag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }

    enum ByteRange: Equatable {
        case whole
        case part(Range<Int>)
        case unsatisfiable
    }

    /// One `bytes=` range: `a-b`, `a-` or `-n`. Several ranges, or a header we do not read,
    /// get the whole photo, as RFC 9110 allows a server to.
    static func byteRange(_ header: String, size: Int) -> ByteRange {
        guard header.hasPrefix("bytes="), header.utf8.count <= 64 else { return .whole }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .whole }
        let first = spec[..<dash], last = spec[spec.index(after: dash)...]
        if first.isEmpty {
            guard let suffix = Int(last), suffix >= 0 else { return .whole }
            guard suffix > 0, size > 0 else { return .unsatisfiable }
            return .part(max(0, size - suffix)..<size)
        }
        guard let start = Int(first), start >= 0 else { return .whole }
        guard start < size else { return .unsatisfiable }
        if last.isEmpty { return .part(start..<size) }
        guard let end = Int(last), end >= start else { return .whole }
        // The last byte is capped before it becomes the bound: `end` may be Int.max.
        return .part(start..<(min(end, size - 1) + 1))
    }
}
