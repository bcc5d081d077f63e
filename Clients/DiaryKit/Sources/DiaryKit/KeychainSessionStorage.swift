#if canImport(Security)
public import Foundation
import Security

/// The session in the Keychain, as one generic password item: what an app ships with.
///
/// The default accessibility, after first unlock (this device only), lets a background
/// refresh read and save the session while the phone is locked, and keeps it out of backups
/// restored to another device. Set `accessGroup` to share the session with an extension.
///
/// Written to Apple's Keychain Services API and compiled only on Apple's platforms: this
/// repository's machines build Linux, so it is not compiled here (README).
public struct KeychainSessionStorage: SessionStorage {
    /// When the item can be read, as `kSecAttrAccessible` takes it.
    public struct Accessibility: Sendable, Hashable {
        let value: String
        /// After the first unlock since a restart; never restored to another device. The default.
        public static let afterFirstUnlockThisDeviceOnly = Accessibility(value: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly as String)
        /// After the first unlock since a restart; moves with an encrypted backup.
        public static let afterFirstUnlock = Accessibility(value: kSecAttrAccessibleAfterFirstUnlock as String)
        /// Only while the device is unlocked: background refreshes then fail while it is locked.
        public static let whenUnlockedThisDeviceOnly = Accessibility(value: kSecAttrAccessibleWhenUnlockedThisDeviceOnly as String)
    }

    /// The item's service (`kSecAttrService`).
    public let service: String
    /// The item's account (`kSecAttrAccount`).
    public let account: String
    /// The Keychain access group shared with the app's extensions, if any.
    public let accessGroup: String?
    /// When the item can be read.
    public let accessibility: Accessibility

    /// Creates a storage for one session.
    public init(service: String = "DiaryKit.session", account: String = "default", accessGroup: String? = nil,
                accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly) {
        self.service = service
        self.account = account
        self.accessGroup = accessGroup
        self.accessibility = accessibility
    }

    /// The Keychain refused an operation; `status` is its `OSStatus`.
    public struct KeychainError: Error, Sendable, Hashable {
        /// The `OSStatus` the Keychain answered.
        public let status: Int32
    }

    /// The session saved last, if any.
    public func loadSession() async throws -> StoredSession? {
        var query = baseQuery()
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = item as? Data else { throw KeychainError(status: status) }
        return try JSONDecoder().decode(StoredSession.self, from: data)
    }

    /// Saves `session` (updating the item in place), or deletes the item when it is nil.
    public func saveSession(_ session: StoredSession?) async throws {
        guard let session else {
            let status = SecItemDelete(baseQuery() as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else { throw KeychainError(status: status) }
            return
        }
        let data = try JSONEncoder().encode(session)
        let attributes: [String: Any] = [kSecValueData as String: data, kSecAttrAccessible as String: accessibility.value]
        let updated = SecItemUpdate(baseQuery() as CFDictionary, attributes as CFDictionary)
        if updated == errSecSuccess { return }
        guard updated == errSecItemNotFound else { throw KeychainError(status: updated) }
        let added = SecItemAdd(baseQuery().merging(attributes) { _, new in new } as CFDictionary, nil)
        guard added == errSecSuccess else { throw KeychainError(status: added) }
    }

    private func baseQuery() -> [String: Any] {
        var query: [String: Any] = [
            kSecClass as String: kSecClassGenericPassword,
            kSecAttrService as String: service,
            kSecAttrAccount as String: account,
        ]
        if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
        return query
    }
}
#endif
