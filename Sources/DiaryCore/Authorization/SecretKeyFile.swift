package import Crypto
import Foundation

/// A server secret kept in a file: the JWT signing key, the photo URLs' key, the secrets key. Production
/// names each file; development creates a random one in the data folder on first use.
package struct SecretKeyFile: Sendable {
    /// The setting that names the file, for the errors a misconfiguration gets.
    package var variable: String
    /// The file's name in the data folder, when the setting is unset outside production.
    package var developmentName: String
    /// What the key is for, in errors.
    package var purpose: String

    package static let jwt = SecretKeyFile(variable: "DIARY_JWT_KEY_FILE", developmentName: "jwt.key", purpose: "JWT key")
    package static let photoURLs = SecretKeyFile(variable: "DIARY_URL_KEY_FILE", developmentName: "url.key", purpose: "photo URL key")
    /// Seals secrets the database keeps for us (Apple refresh tokens).
    package static let secrets = SecretKeyFile(variable: "DIARY_SECRETS_KEY_FILE", developmentName: "secrets.key", purpose: "secrets key")

    package func load(path: String?, dataDirectory: String, production: Bool) throws -> SymmetricKey {
        let file = path ?? (dataDirectory as NSString).appendingPathComponent(developmentName)
        if let data = FileManager.default.contents(atPath: file) {
            guard data.count >= 32 else { throw ConfigurationError(description: "the \(purpose) in \(file) is shorter than 32 bytes") }
            return SymmetricKey(data: data)
        }
        guard path == nil, !production else {
            throw ConfigurationError(description: production && path == nil
                ? "\(variable) must name a key file of at least 32 random bytes in production"
                : "the \(purpose) file \(file) does not exist")
        }
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        let key = SymmetricKey(size: .bits256)
        let bytes = key.withUnsafeBytes { Data($0) }
        guard FileManager.default.createFile(atPath: file, contents: bytes, attributes: [.posixPermissions: 0o600]) else {
            throw ConfigurationError(description: "cannot write a development \(purpose) to \(file)")
        }
        return key
    }
}
