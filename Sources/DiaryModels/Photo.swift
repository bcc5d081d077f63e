public import Foundation

/// A photo as its diary's members see it, with a signed URL that works without a token
/// until `urlExpiresAt` (an hour after it is minted).
public struct Photo: Codable, Sendable, Equatable {
    public var id: UUID
    public var contentType: String
    public var bytes: Int
    public var width: Int
    public var height: Int
    public var url: String
    public var urlExpiresAt: Date

    public init(id: UUID, contentType: String, bytes: Int, width: Int, height: Int, url: String, urlExpiresAt: Date) {
        self.id = id
        self.contentType = contentType
        self.bytes = bytes
        self.width = width
        self.height = height
        self.url = url
        self.urlExpiresAt = urlExpiresAt
    }
}
