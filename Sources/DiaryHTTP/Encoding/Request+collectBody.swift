import Hummingbird

extension Request {
    /// The whole body, refused with 413 as soon as it is known to pass `limit`: from
    /// Content-Length before a byte is read, and by counting when there is none.
    func collectBody(upTo limit: Int) async throws -> ByteBuffer {
        if let length = headers[.contentLength].flatMap({ Int($0) }), length > limit {
            throw Problem.payloadTooLarge(limit: limit)
        }
        do {
            return try await body.collect(upTo: limit)
        } catch {
            throw Problem.payloadTooLarge(limit: limit)
        }
    }
}
