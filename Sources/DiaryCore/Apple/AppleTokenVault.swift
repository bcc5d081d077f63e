package import Crypto
package import Foundation

/// Seals Apple refresh tokens for the database: AES-GCM (random 96-bit nonce, 128-bit tag)
/// under the secrets key, with the token's id as associated data, so that a sealed token
/// copied to another row does not open.
package struct AppleTokenVault: Sendable {
    /// Kept as bytes because `SymmetricKey` is not `Sendable`.
    private let keyBytes: Data

    package init(key: SymmetricKey) {
        keyBytes = key.withUnsafeBytes { Data($0.prefix(32)) }
    }

    /// A vault under a random key that is never kept: for a server that seals nothing
    /// (no Sign in with Apple key), so that it needs no secrets key file.
    package static func ephemeral() -> AppleTokenVault {
        AppleTokenVault(key: SymmetricKey(size: .bits256))
    }

    package struct Sealed: Sendable, Equatable {
        package var tokenID: UUID
        /// nonce ‖ ciphertext ‖ tag.
        package var bytes: Data
    }

    package func seal(_ token: String, id: UUID = UUID()) throws -> Sealed {
        let box = try AES.GCM.seal(Data(token.utf8), using: SymmetricKey(data: keyBytes), authenticating: Self.associatedData(id))
        guard let combined = box.combined else { throw SealingFailed() }
        return Sealed(tokenID: id, bytes: combined)
    }

    package func open(_ sealed: Sealed) throws -> String {
        let box = try AES.GCM.SealedBox(combined: sealed.bytes)
        let plain = try AES.GCM.open(box, using: SymmetricKey(data: keyBytes), authenticating: Self.associatedData(sealed.tokenID))
        return String(decoding: plain, as: UTF8.self)
    }

    private static func associatedData(_ id: UUID) -> Data {
        Data("apple-refresh-token:\(id.uuidString.lowercased())".utf8)
    }

    struct SealingFailed: Error {}
}
