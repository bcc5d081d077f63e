import Foundation
import Hummingbird

/// An RFC 9457 problem: every error the API returns has this shape and a stable `code`.
struct Problem: HTTPResponseError, Sendable {
    var status: HTTPResponse.Status
    var code: String
    var detail: String
    var headers: HTTPFields = [:]

    private struct Body: Encodable {
        var type: String
        var title: String
        var status: Int
        var detail: String
        var code: String
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        let body = Body(
            type: "https://zutto-nikki.app/problems/\(code)",
            title: status.reasonPhrase,
            status: status.code,
            detail: detail,
            code: code
        )
        var fields = headers
        fields[.contentType] = "application/problem+json"
        let data = try JSONEncoder().encode(body)
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func serviceUnavailable(_ detail: String, retryAfterSeconds: Int = 1) -> Problem {
        Problem(status: .serviceUnavailable, code: "service_unavailable", detail: detail, headers: [.retryAfter: String(retryAfterSeconds)])
    }
}
