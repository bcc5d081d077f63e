import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Sends `X-App-Version` with every call, so the server can answer 426 `upgrade_required`
/// to a version it no longer supports.
struct AppVersionMiddleware: ClientMiddleware {
    let version: String

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[HTTPField.Name("X-App-Version")!] = version
        return try await next(request, body, baseURL)
    }
}

/// The runtime percent-encodes header values as it would a URI's (`bytes=0-9` becomes
/// `bytes%3D0-9`), which the server does not read as a range. The photo's `Range` and
/// `If-None-Match` go out as written, decoded back here just before they are sent.
struct RawPhotoHeadersMiddleware: ClientMiddleware {
    static let names: [HTTPField.Name] = [.range, .ifNoneMatch]

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        if operationID == "getPhoto" {
            for name in Self.names {
                if let value = request.headerFields[name], let raw = value.removingPercentEncoding {
                    request.headerFields[name] = raw
                }
            }
        }
        return try await next(request, body, baseURL)
    }
}

/// The runtime reads response headers as URI components, which mangles an export's
/// `Content-Disposition` (its `filename*` is itself percent-encoded UTF-8). For the exports the
/// header is percent-encoded whole here, so the runtime's decoding hands back the header exactly
/// as the server sent it.
struct RawExportHeaderMiddleware: ClientMiddleware {
    static let operations: Set<String> = ["exportDiary", "exportMe"]
    static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var (response, responseBody) = try await next(request, body, baseURL)
        if Self.operations.contains(operationID), let value = response.headerFields[.contentDisposition],
           let protected = value.addingPercentEncoding(withAllowedCharacters: Self.unreserved) {
            response.headerFields[.contentDisposition] = protected
        }
        return (response, responseBody)
    }
}
