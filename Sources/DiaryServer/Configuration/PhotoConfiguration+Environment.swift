import DiaryCore
import DiaryHTTP
import Foundation
import S3Client

extension PhotoConfiguration {
    /// The settings an S3 store needs; S3_SECRET_ACCESS_KEY_FILE may stand for the secret.
    static let s3Variables = ["S3_ENDPOINT", "S3_REGION", "S3_BUCKET", "S3_ACCESS_KEY_ID", "S3_SECRET_ACCESS_KEY"]

    /// PHOTO_STORE (`folder`, the default, or `s3`); the folder's PHOTO_STORE_DIR; the bucket's
    /// S3_ENDPOINT, S3_REGION, S3_BUCKET, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY (or
    /// S3_SECRET_ACCESS_KEY_FILE), S3_PATH_STYLE=1 and S3_PREFIX; PHOTO_URLS (`server`, the
    /// default, or `presigned`, with the bucket only); DIARY_URL_KEY_FILE.
    /// `s3` with any of them missing refuses to start, naming what is missing, and so does a
    /// partial S3 set beside the folder store in production, where it is surely a mistake.
    static func fromEnvironment(production: Bool, _ environment: [String: String] = Setting.environment) throws -> PhotoConfiguration {
        func value(_ name: String) -> String? { Setting.string(flag: nil, environment: name, in: environment) }
        var photos = PhotoConfiguration(storeDirectory: value("PHOTO_STORE_DIR"), urlKeyFile: value("DIARY_URL_KEY_FILE"))
        let store = value("PHOTO_STORE") ?? "folder"
        guard store == "folder" || store == "s3" else {
            throw ConfigurationError(description: "PHOTO_STORE must be folder or s3, not \"\(store)\"")
        }
        let urls = value("PHOTO_URLS") ?? PhotoConfiguration.URLs.server.rawValue
        guard let urlMode = PhotoConfiguration.URLs(rawValue: urls) else {
            throw ConfigurationError(description: "PHOTO_URLS must be server or presigned, not \"\(urls)\"")
        }
        guard urlMode == .server || store == "s3" else {
            throw ConfigurationError(description: "PHOTO_URLS=presigned needs PHOTO_STORE=s3: a folder has no URLs of its own")
        }
        photos.urls = urlMode
        if let kept = value("PHOTO_DELETED_KEEP_HOURS") {
            guard let hours = Int(kept), (0...8760).contains(hours) else {
                throw ConfigurationError(description: "PHOTO_DELETED_KEEP_HOURS must be a whole number of hours from 0 to 8760, not \"\(kept)\"")
            }
            photos.sweeper.deletedFilesKept = .seconds(hours * 3600)
        }
        var secret = value("S3_SECRET_ACCESS_KEY")
        if secret == nil, let file = value("S3_SECRET_ACCESS_KEY_FILE") {
            secret = try Setting.fileText(file, variable: "S3_SECRET_ACCESS_KEY_FILE").trimmingCharacters(in: .whitespacesAndNewlines)
        }
        var missing = s3Variables.filter { $0 == "S3_SECRET_ACCESS_KEY" ? secret == nil : value($0) == nil }
        if missing.contains("S3_SECRET_ACCESS_KEY") { missing[missing.firstIndex(of: "S3_SECRET_ACCESS_KEY")!] = "S3_SECRET_ACCESS_KEY (or S3_SECRET_ACCESS_KEY_FILE)" }
        guard store == "s3" else {
            if production && missing.count < s3Variables.count {
                throw ConfigurationError(description: "S3 settings are given but PHOTO_STORE is not s3; set PHOTO_STORE=s3, or remove them")
            }
            return photos
        }
        guard missing.isEmpty, let secret else {
            throw ConfigurationError(description: "PHOTO_STORE=s3, but \(missing.joined(separator: ", ")) not set")
        }
        let endpointText = value("S3_ENDPOINT")!
        guard let endpoint = URL(string: endpointText), endpoint.host != nil, endpoint.query == nil,
              endpoint.scheme == "https" || (!production && endpoint.scheme == "http")
        else {
            throw ConfigurationError(description: "S3_ENDPOINT must be an https URL\(production ? "" : " (http outside production)"), not \"\(endpointText)\"")
        }
        let pathStyleText = value("S3_PATH_STYLE") ?? "0"
        guard pathStyleText == "0" || pathStyleText == "1" else {
            throw ConfigurationError(description: "S3_PATH_STYLE must be 0 or 1, not \"\(pathStyleText)\"")
        }
        let pathStyle = pathStyleText == "1"
        let bucket = value("S3_BUCKET")!
        guard bucket.utf8.count >= 3, bucket.utf8.count <= 63, bucket.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2d || $0 == 0x2e }) else {
            throw ConfigurationError(description: "S3_BUCKET must be 3 to 63 lower-case letters, digits, dots and hyphens, not \"\(bucket)\"")
        }
        let prefix = value("S3_PREFIX") ?? ""
        guard prefix.utf8.count <= 256, !prefix.hasPrefix("/") else {
            throw ConfigurationError(description: "S3_PREFIX must not start with / and must be at most 256 bytes")
        }
        photos.s3 = (
            S3Configuration(
                endpoint: endpoint, region: value("S3_REGION")!, bucket: bucket, pathStyle: pathStyle,
                credentials: S3Credentials(accessKeyID: value("S3_ACCESS_KEY_ID")!, secretAccessKey: secret)),
            prefix
        )
        return photos
    }
}
