public import AsyncHTTPClient
import Crypto
public import Foundation
public import NIOCore
import NIOHTTP1

/// An S3-compatible bucket over the process's shared HTTP client: PUT, ranged GET, HEAD,
/// DELETE and a paged LIST, each request signed with Signature Version 4, and presigned GET
/// URLs. It knows nothing of photos.
public struct S3Client: Sendable {
    public let configuration: S3Configuration
    private let http: HTTPClient
    private let signer: SigV4Signer
    private let timeout: TimeAmount

    public init(configuration: S3Configuration, http: HTTPClient, timeout: Duration = .seconds(30)) {
        self.configuration = configuration
        self.http = http
        self.signer = SigV4Signer(credentials: configuration.credentials, region: configuration.region)
        self.timeout = TimeAmount(timeout)
    }

    public struct Object: Sendable, Equatable {
        public var key: String
        public var lastModified: Date
        public var size: Int
    }

    /// Stores `bytes` as `key`, all or nothing. `Content-MD5` has the service check the bytes it
    /// received; the payload's SHA-256 is signed, so neither can change on the way.
    public func put(_ key: String, bytes: [UInt8], contentType: String = "application/octet-stream") async throws {
        let md5 = Data(Insecure.MD5.hash(data: bytes)).base64EncodedString()
        let response = try await send(
            "PUT", key: key, headers: [("content-md5", md5), ("content-type", contentType), ("content-length", String(bytes.count))],
            body: bytes, payloadHash: SigV4.sha256Hex(bytes)
        )
        try await Self.expectSuccess(response, operation: "PUT", key: key)
    }

    /// The object's size, or nil when there is none.
    public func head(_ key: String) async throws -> Int? {
        let response = try await send("HEAD", key: key)
        if response.status == .notFound { return nil }
        try await Self.expectSuccess(response, operation: "HEAD", key: key)
        return response.headers.first(name: "content-length").flatMap { Int($0) }
    }

    /// The object's bytes in `range` (all of them for nil), as the service sends them: the
    /// caller reads `body` at its own pace, which is the connection's. A missing object throws
    /// `notFound` before any byte is taken.
    public func get(_ key: String, range: Range<Int>? = nil) async throws -> HTTPClientResponse.Body {
        var headers: [(String, String)] = []
        if let range, !range.isEmpty { headers.append(("range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)")) }
        let response = try await send("GET", key: key, headers: headers)
        try await Self.expectSuccess(response, operation: "GET", key: key)
        return response.body
    }

    /// Removes the object; one that is not there is not an error (S3 answers 204 either way).
    public func delete(_ key: String) async throws {
        let response = try await send("DELETE", key: key)
        if response.status == .notFound { return }
        try await Self.expectSuccess(response, operation: "DELETE", key: key)
    }

    /// One page of the objects whose keys start with `prefix` (ListObjectsV2), and the token
    /// of the next page, if there is one.
    public func list(prefix: String, continuation: String? = nil, maxKeys: Int = 1000) async throws -> (objects: [Object], next: String?) {
        var query = [("list-type", "2"), ("prefix", prefix), ("max-keys", String(maxKeys))]
        if let continuation { query.append(("continuation-token", continuation)) }
        let response = try await send("GET", key: nil, query: query)
        try await Self.expectSuccess(response, operation: "LIST", key: prefix)
        let xml = String(buffer: try await response.body.collect(upTo: 16 * 1024 * 1024))
        var objects: [Object] = []
        for contents in S3XML.elements("Contents", in: xml[...]) {
            guard let key = S3XML.value("Key", in: contents), let size = S3XML.value("Size", in: contents).flatMap({ Int($0) }),
                  let modified = S3XML.value("LastModified", in: contents).flatMap(Self.parseTimestamp)
            else { throw S3Error.malformed(operation: "LIST", reason: "a Contents record without Key, Size or LastModified") }
            objects.append(Object(key: key, lastModified: modified, size: size))
        }
        let truncated = S3XML.value("IsTruncated", in: xml[...]) == "true"
        let next = truncated ? S3XML.value("NextContinuationToken", in: xml[...]) : nil
        if truncated && next == nil { throw S3Error.malformed(operation: "LIST", reason: "truncated without a continuation token") }
        return (objects, next)
    }

    /// A URL anyone holding it may GET `key` with until `expires` seconds after `date`. With
    /// `responseContentType`, the store answers with that Content-Type whatever the object was
    /// stored as (`response-content-type`, part of what is signed).
    public func presignedGET(_ key: String, expires: Int, date: Date = Date(), responseContentType: String? = nil) -> String {
        let location = configuration.location(of: key)
        let overrides = responseContentType.map { [("response-content-type", $0)] } ?? []
        let query = signer.presignedQuery(method: "GET", path: location.path, query: overrides, host: location.host, expires: expires, date: date)
        return location.base + location.path + "?" + SigV4.encodedQueryString(query)
    }

    // MARK: - Requests

    private func send(
        _ method: String, key: String?, query: [(String, String)] = [], headers: [(String, String)] = [],
        body: [UInt8]? = nil, payloadHash: String = SigV4.sha256Hex([UInt8]())
    ) async throws -> HTTPClientResponse {
        let location = configuration.location(of: key)
        let signed = [("host", location.host)] + headers
        var request = HTTPClientRequest(url: location.base + location.path + (query.isEmpty ? "" : "?" + SigV4.encodedQueryString(query)))
        request.method = HTTPMethod(rawValue: method)
        for (name, value) in signed + signer.signedHeaders(method: method, path: location.path, query: query, headers: signed, payloadHash: payloadHash, date: Date()) {
            request.headers.replaceOrAdd(name: name, value: value)
        }
        if let body { request.body = .bytes(body) }
        do {
            return try await http.execute(request, timeout: timeout)
        } catch {
            throw S3Error.unreachable(operation: method == "GET" && key == nil ? "LIST" : method, key: key ?? "", reason: "\(error)")
        }
    }

    private static func expectSuccess(_ response: HTTPClientResponse, operation: String, key: String) async throws {
        guard !(200..<300).contains(response.status.code) else { return }
        // S3's error body names the reason (NoSuchKey, SignatureDoesNotMatch, SlowDown); HEAD has none.
        let body = (try? await response.body.collect(upTo: 64 * 1024)).map { String(buffer: $0) } ?? ""
        let code = S3XML.value("Code", in: body[...])
        if response.status == .notFound { throw S3Error.notFound(operation: operation, key: key) }
        throw S3Error.refused(operation: operation, key: key, status: Int(response.status.code), code: code)
    }

    /// ISO 8601 with or without fractional seconds, as S3's LastModified is written.
    static func parseTimestamp(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
