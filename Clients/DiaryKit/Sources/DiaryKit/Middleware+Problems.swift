import DiaryAPI
import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Turns every problem+json answer into a thrown `DiaryError.problem`, whatever the operation,
/// so the hand-written layer handles only success and every status (426 and 503 included)
/// arrives as one typed error with its stable code.
struct ProblemMiddleware: ClientMiddleware {
    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        let (response, responseBody) = try await next(request, body, baseURL)
        guard response.status.code >= 400, response.headerFields[.contentType]?.hasPrefix("application/problem+json") == true else {
            return (response, responseBody)
        }
        throw DiaryError.problem(try await Self.problem(response, body: responseBody))
    }

    /// Reads a problem+json answer; one whose body is not a problem still keeps its status.
    static func problem(_ response: HTTPResponse, body: HTTPBody?) async throws -> Problem {
        var bytes = Data()
        if let body { bytes = try await Data(collecting: body, upTo: 64 * 1024) }
        let retryAfter = response.headerFields[.retryAfter].flatMap(Int.init).map { Duration.seconds($0) }
        guard let decoded = try? JSONDecoder().decode(Components.Schemas.Problem.self, from: bytes) else {
            return Problem(status: response.status.code, code: .unknown(""), title: response.status.reasonPhrase,
                           detail: String(decoding: bytes, as: UTF8.self), retryAfter: retryAfter)
        }
        return Problem(
            status: decoded.status, code: ProblemCode(decoded.code), title: decoded.title, detail: decoded.detail,
            requestID: decoded.requestId, retryAfter: retryAfter)
    }
}

extension ProblemCode {
    /// The code of a decoded problem: its known value, or the text of one added later.
    init(_ payload: Components.Schemas.Problem.CodePayload) {
        self.init(rawValue: payload.value1?.rawValue ?? payload.value2 ?? "")
    }
}

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
