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
