import DiaryCore
import Foundation
import Hummingbird

/// An RFC 9457 problem: every error the API returns has this shape and a stable `code`, one of
/// the refusals of the one table (`Refusal`, made from refusals.tsv), which gives its status
/// and title.
struct Problem: HTTPResponseError, Sendable {
    var status: HTTPResponse.Status
    var code: Refusal
    var detail: String
    var headers: HTTPFields = [:]

    init(_ code: Refusal, detail: String, headers: HTTPFields = [:]) {
        self.init(status: HTTPResponse.Status(code: code.status), code: code, detail: detail, headers: headers)
    }

    /// A status the table does not give: Hummingbird's own errors (`ProblemMapping`), and the
    /// realtime endpoint asked without an upgrade (`webSocketEndpoint`).
    private init(status: HTTPResponse.Status, code: Refusal, detail: String, headers: HTTPFields = [:]) {
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = headers
    }

    static func passingOn(_ status: HTTPResponse.Status, detail: String) -> Problem {
        Problem(status: status, code: status.code >= 500 ? .internal : .badRequest, detail: detail)
    }

    /// The realtime endpoint, asked without an upgrade.
    static func webSocketEndpoint() -> Problem {
        Problem(status: .upgradeRequired, code: .badRequest, detail: "this is a WebSocket endpoint; send an upgrade request", headers: [.upgrade: "websocket"])
    }

    private struct Body: Encodable {
        var type: String
        var title: String
        var status: Int
        var detail: String
        var code: String
        var requestId: String?
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var fields = headers
        fields[.contentType] = "application/problem+json"
        return Response(status: status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: try body(requestID: context.id))))
    }

    func body(requestID: String?) throws -> Data {
        let body = Body(
            type: "https://zutto-nikki.app/problems/\(code.rawValue)",
            title: code.title,
            status: status.code,
            detail: detail,
            code: code.rawValue,
            requestId: status.code >= 500 ? requestID : nil
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(body)
    }

    /// The whole HTTP/1.1 response, for a connection that closes after it (a refused
    /// WebSocket upgrade, which never reaches the router).
    func http1Response() throws -> ByteBuffer {
        let body = try body(requestID: nil)
        var head = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\n"
        for field in headers { head += "\(field.name.canonicalName): \(field.value)\r\n" }
        head += "content-type: application/problem+json\r\ncontent-length: \(body.count)\r\nconnection: close\r\n\r\n"
        var buffer = ByteBuffer(string: head)
        buffer.writeBytes(body)
        return buffer
    }

    static func serviceUnavailable(_ detail: String, code: Refusal = .serviceUnavailable, retryAfterSeconds: Int = 1) -> Problem {
        Problem(code, detail: detail, headers: [.retryAfter: String(retryAfterSeconds)])
    }

    /// `invalidToken`: a token was presented and refused, which RFC 6750 names `invalid_token`.
    static func unauthorized(_ detail: String, invalidToken: Bool = false) -> Problem {
        let challenge = invalidToken ? #"Bearer realm="zutto-nikki", error="invalid_token""# : #"Bearer realm="zutto-nikki""#
        return Problem(.unauthorized, detail: detail, headers: [.wwwAuthenticate: challenge])
    }

    /// A genuine access token past its expiry: refresh, rather than sign in again.
    static func tokenExpired() -> Problem {
        Problem(
            .tokenExpired, detail: "the access token has expired; refresh it",
            headers: [.wwwAuthenticate: #"Bearer realm="zutto-nikki", error="invalid_token", error_description="the access token expired""#])
    }

    static func notFound(_ detail: String = "no such resource") -> Problem {
        Problem(.notFound, detail: detail)
    }

    static func forbidden(_ detail: String) -> Problem {
        Problem(.forbidden, detail: detail)
    }

    static func validation(field: String, _ problem: String) -> Problem {
        Problem(.validationFailed, detail: field.isEmpty ? problem : "\(field) \(problem)")
    }

    static func payloadTooLarge(limit: Int = APIRequestDecoder.maximumBytes) -> Problem {
        Problem(.payloadTooLarge, detail: "the body is larger than \(limit) bytes")
    }

    static func internalError() -> Problem {
        Problem(.internal, detail: "an unexpected error occurred; quote the request id when reporting it")
    }
}
