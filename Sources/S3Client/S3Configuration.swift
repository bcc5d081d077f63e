public import Foundation

/// Where a bucket is and how to reach it: any S3-compatible service (AWS S3, Cloudflare R2,
/// MinIO, Supabase Storage's S3 endpoint) by its endpoint, region and addressing style.
public struct S3Configuration: Sendable, Equatable {
    /// The service's base URL, such as `https://s3.ap-northeast-1.amazonaws.com`,
    /// `https://<account>.r2.cloudflarestorage.com` or `http://127.0.0.1:9000`.
    public var endpoint: URL
    public var region: String
    public var bucket: String
    /// `https://host/bucket/key` (MinIO, R2, Supabase, moto) rather than
    /// `https://bucket.host/key` (AWS's default).
    public var pathStyle: Bool
    public var credentials: S3Credentials

    public init(endpoint: URL, region: String, bucket: String, pathStyle: Bool, credentials: S3Credentials) {
        self.endpoint = endpoint
        self.region = region
        self.bucket = bucket
        self.pathStyle = pathStyle
        self.credentials = credentials
    }

    /// The URL of `key` (or of the bucket, for a nil key), its Host header and its path as
    /// signed: each segment of the key percent-encoded once, `/` kept.
    func location(of key: String?) -> (host: String, path: String, base: String) {
        let scheme = endpoint.scheme ?? "https"
        let endpointHost = endpoint.host ?? ""
        let defaultPort = scheme == "https" ? 443 : 80
        let port = endpoint.port.flatMap { $0 == defaultPort ? nil : $0 }
        let basePath = endpoint.path.hasSuffix("/") ? String(endpoint.path.dropLast()) : endpoint.path
        let encodedKey = key.map { "/" + SigV4.uriEncode($0, keepSlash: true) } ?? "/"
        let host: String
        let path: String
        if pathStyle {
            host = endpointHost
            path = basePath + "/" + SigV4.uriEncode(bucket, keepSlash: false) + (key == nil ? "" : encodedKey)
        } else {
            host = bucket + "." + endpointHost
            path = basePath + encodedKey
        }
        let hostHeader = port.map { "\(host):\($0)" } ?? host
        return (hostHeader, path.isEmpty ? "/" : path, "\(scheme)://\(hostHeader)")
    }
}
