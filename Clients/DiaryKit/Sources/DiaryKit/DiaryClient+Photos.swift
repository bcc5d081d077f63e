import DiaryAPI
public import Foundation
import HTTPTypes
import OpenAPIRuntime

/// An image format the server stores.
public enum PhotoFormat: String, Codable, Sendable, CaseIterable {
    /// JPEG; convert HEIC to it before uploading (the server refuses HEIC).
    case jpeg = "image/jpeg"
    /// PNG.
    case png = "image/png"
    /// WebP.
    case webp = "image/webp"
}

/// A photo's bytes as the server answered a download.
public enum PhotoDownload: Sendable, Hashable {
    /// The whole photo, with its ETag to send as `ifNoneMatch` next time.
    case full(Data, etag: String?)
    /// The range asked for, with `Content-Range` (`bytes first-last/size`).
    case partial(Data, contentRange: String?)
    /// The copy held (its ETag was sent) is current.
    case notModified
}

extension DiaryClient {
    /// Uploads an image as it is (at most 10 MiB, 12,000 px a side); the server strips its
    /// metadata. Attach the returned photo's id to an entry within 24 hours.
    public func uploadPhoto(_ data: Data, format: PhotoFormat) async throws -> Photo {
        try await uploadPhoto(HTTPBody(data), format: format)
    }

    /// Uploads a photo's body, whichever image type it is.
    func uploadPhoto(_ body: HTTPBody, format: PhotoFormat) async throws -> Photo {
        Photo(try await perform {
            let input: Operations.UploadPhoto.Input.Body = switch format {
            case .jpeg: .jpeg(body)
            case .png: .png(body)
            case .webp: .imageWebp(body)
            }
            return try await api.uploadPhoto(body: input).created.body.json
        })
    }

    /// Downloads a photo by the URL an entry carries, with no token. `range` is one byte range
    /// as `first...last`; `ifNoneMatch` the ETag of a copy held. Both are sent as the server
    /// reads them. An expired URL throws `url_expired`: fetch the entry again for a new one.
    public func downloadPhoto(_ photo: Photo, range: ClosedRange<Int>? = nil, ifNoneMatch: String? = nil) async throws -> PhotoDownload {
        let (status, body, header) = try await photoResponse(photo, range: range, ifNoneMatch: ifNoneMatch)
        switch status {
        case 200: return .full(try await Self.collect(body), etag: header)
        case 206: return .partial(try await Self.collect(body), contentRange: header)
        case 304: return .notModified
        default: throw DiaryError.unexpectedResponse(status: status)
        }
    }

    /// A photo's answer, its body unread: the status, the body, and the ETag (200) or
    /// `Content-Range` (206). The URL the server signed is called through the contract; a
    /// bucket's presigned URL as it is.
    func photoResponse(_ photo: Photo, range: ClosedRange<Int>?, ifNoneMatch: String?) async throws -> (Int, HTTPBody?, String?) {
        guard let url = URL(string: photo.url, relativeTo: configuration.serverURL),
              let components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            throw DiaryError.unexpectedResponse(status: 0)
        }
        let query = Dictionary((components.queryItems ?? []).map { ($0.name, $0.value ?? "") }, uniquingKeysWith: { first, _ in first })
        let rangeHeader = range.map { "bytes=\($0.lowerBound)-\($0.upperBound)" }
        guard components.path.hasPrefix("/v1/photos/"), let exp = query["exp"], let sig = query["sig"] else {
            // PHOTO_URLS=presigned: the bucket's own URL, fetched as it is.
            return try await presignedResponse(url, range: rangeHeader, ifNoneMatch: ifNoneMatch)
        }
        let photoID = String(components.path.dropFirst("/v1/photos/".count))
        let output = try await perform {
            try await api.getPhoto(path: .init(photoId: photoID), query: .init(exp: exp, sig: sig),
                                   headers: .init(range: rangeHeader, ifNoneMatch: ifNoneMatch))
        }
        switch output {
        case .ok(let ok): return (200, ok.body.bytes, ok.headers.eTag)
        case .partialContent(let partial): return (206, partial.body.bytes, partial.headers.contentRange)
        case .notModified: return (304, nil, nil)
        case .undocumented(let status, _): throw DiaryError.unexpectedResponse(status: status)
        default: throw DiaryError.unexpectedResponse(status: 0)
        }
    }

    private func presignedResponse(_ url: URL, range: String?, ifNoneMatch: String?) async throws -> (Int, HTTPBody?, String?) {
        var request = HTTPRequest(method: .get, scheme: nil, authority: nil, path: url.path + (url.query.map { "?" + $0 } ?? ""))
        if let range { request.headerFields[.range] = range }
        if let ifNoneMatch { request.headerFields[.ifNoneMatch] = ifNoneMatch }
        var base = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        base.path = ""
        base.query = nil
        let (response, body) = try await transport.send(request, body: nil, baseURL: base.url!, operationID: "getPhoto")
        let status = response.status.code
        return (status, body, status == 206 ? response.headerFields[.contentRange] : response.headerFields[.eTag])
    }
}

extension DiaryClient {
    /// A photo's bytes, whole: at most the server's 10 MiB limit, with room to spare.
    static func collect(_ body: HTTPBody?) async throws -> Data {
        guard let body else { return Data() }
        return try await Data(collecting: body, upTo: 11 * 1024 * 1024)
    }
}

extension Operations.GetPhoto.Output.Ok.Body {
    /// The bytes, whichever image type the server answered with.
    var bytes: HTTPBody {
        switch self {
        case .jpeg(let body), .png(let body), .imageWebp(let body): body
        }
    }
}

extension Operations.GetPhoto.Output.PartialContent.Body {
    /// The bytes, whichever image type the server answered with.
    var bytes: HTTPBody {
        switch self {
        case .jpeg(let body), .png(let body), .imageWebp(let body): body
        }
    }
}

extension Photo {
    /// Whether `url` has stopped working by `date`: fetch the entry again for a fresh one.
    public func isURLExpired(at date: Date = Date()) -> Bool { urlExpiresAt <= date }
}

extension PhotoDownload {
    /// The bytes received, none for `notModified`.
    public var data: Data? {
        switch self {
        case .full(let data, _), .partial(let data, _): data
        case .notModified: nil
        }
    }
}
