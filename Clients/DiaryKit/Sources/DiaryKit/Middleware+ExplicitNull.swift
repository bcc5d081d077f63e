import Foundation
import HTTPTypes
import OpenAPIRuntime

/// An entry's edit that clears its question sends `"question": null`, which the generated
/// body cannot say: it leaves out a nil, and a field left out means "unchanged"
/// (openapi.yaml, UpdateEntryRequest). `clearingQuestion` is set around the one call that
/// clears (`DiaryClient.clearQuestion`), and the edit's JSON gains the null here, just before
/// it is sent.
struct ClearQuestionMiddleware: ClientMiddleware {
    @TaskLocal static var clearingQuestion = false

    /// The largest edit body: 10,000 characters of content, each at most 4 bytes, escaped.
    static let bodyLimit = 256 * 1024

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard operationID == "updateEntry", Self.clearingQuestion, let body else { return try await next(request, body, baseURL) }
        let sent = try await Data(collecting: body, upTo: Self.bodyLimit)
        var fields = try JSONSerialization.jsonObject(with: sent) as? [String: Any] ?? [:]
        fields["question"] = NSNull()
        let edited = try JSONSerialization.data(withJSONObject: fields)
        var request = request
        // The runtime counted the body it made.
        if request.headerFields[.contentLength] != nil { request.headerFields[.contentLength] = String(edited.count) }
        return try await next(request, HTTPBody(edited), baseURL)
    }
}
