import DiaryCore
import DiaryModels
import Foundation
import Hummingbird
import Logging
import NIOCore
import PostgresClient

/// Uploads (`POST /v1/photos`, the raw image as the body) and signed downloads
/// (`GET /v1/photos/{id}?exp=…&sig=…`, no token).
struct PhotoRoutes {
    static let maximumBytes = 10 * 1024 * 1024

    let store: any PhotoStore
    let downloads: PhotoDownloads

    func register(authenticated router: RouterGroup<AuthenticatedContext>) {
        router.post("photos") { request, context -> EditedResponse<Photo> in
            let declared = try Self.declaredType(request.headers[.contentType])
            let bytes = try await Self.body(of: request)
            let photo = try await PhotoRepository(scope: context.scope, store: store).upload(bytes, declaredAs: declared)
            context.logger.info("photo uploaded", metadata: [
                "photo": "\(photo.id)", "type": "\(photo.contentType)", "bytes": "\(photo.bytes)", "received": "\(bytes.count)",
            ])
            return EditedResponse(status: .created, response: photo)
        }
    }

    func register(public router: RouterGroup<AppRequestContext>) {
        router.get("photos/:photoId") { request, context -> Response in
            guard let text = context.parameters.get("photoId"), let id = UUID(canonicalText: text) else {
                throw DomainError.forbidden("this photo URL is not valid")
            }
            let query = request.uri.queryParameters
            let file = try await downloads.file(id: id, exp: query.get("exp"), sig: query.get("sig"))
            return try await PhotoResponse(file: file, downloads: downloads).response(to: request)
        }
    }

    /// The media type, parameters and case aside; only the three we keep.
    static func declaredType(_ header: String?) throws -> PhotoContentType {
        guard let type = PhotoContentType(rawValue: MediaType.essence(of: header)) else {
            throw DomainError(.unsupportedMediaType, "Content-Type must be image/jpeg, image/png or image/webp (convert HEIC to JPEG first)")
        }
        return type
    }

    static func body(of request: Request) async throws -> [UInt8] {
        let bytes = Array(try await request.collectBody(upTo: maximumBytes).readableBytesView)
        guard !bytes.isEmpty else { throw DomainError(.invalidImage, "the body is empty") }
        return bytes
    }
}
