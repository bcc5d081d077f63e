import DiaryAPI
public import Foundation

extension DiaryClient {
    /// Registers this device for the caller's push notifications.
    ///
    /// - Parameters:
    ///   - deviceToken: the token `didRegisterForRemoteNotificationsWithDeviceToken` gave.
    ///   - environment: `.sandbox` for development builds, `.production` for TestFlight and
    ///     the App Store.
    public func registerDevice(token deviceToken: Data, environment: PushEnvironment) async throws {
        try await registerDevice(hexToken: Self.hex(deviceToken), environment: environment)
    }

    /// Registers a device by its token as hex text (64 to 200 digits).
    public func registerDevice(hexToken: String, environment: PushEnvironment) async throws {
        guard let known = Components.Schemas.PushEnvironment(rawValue: environment.rawValue) else {
            throw DiaryError.problem(Problem(status: 400, code: .validationFailed, title: "Bad Request",
                                             detail: "no push environment \(environment.rawValue)"))
        }
        _ = try await perform {
            try await api.registerDevice(path: .init(deviceToken: hexToken), body: .json(.init(environment: known))).noContent
        }
    }

    /// Stops notifications to this device (at sign-out, or when the user turns them off).
    public func removeDevice(token deviceToken: Data) async throws {
        try await removeDevice(hexToken: Self.hex(deviceToken))
    }

    /// Stops notifications to a device given by its token as hex text.
    public func removeDevice(hexToken: String) async throws {
        _ = try await perform { try await api.removeDevice(path: .init(deviceToken: hexToken)).noContent }
    }

    /// The caller's registered devices, oldest first.
    public func devices() async throws -> [Device] {
        try await perform { try await api.listDevices().ok.body.json.devices }.map(Device.init)
    }

    static func hex(_ data: Data) -> String {
        data.map { byte in
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }.joined()
    }
}

extension PushNotification {
    /// Reads a notification's `userInfo` (`UNNotificationContent.userInfo`), or nil when it is
    /// not one of this server's.
    public init?(userInfo: [AnyHashable: Any]) {
        var plain: [String: Any] = [:]
        for (key, value) in userInfo { if let key = key as? String { plain[key] = value } }
        guard JSONSerialization.isValidJSONObject(plain),
              let data = try? JSONSerialization.data(withJSONObject: plain),
              let decoded = try? JSONDecoder().decode(Components.Schemas.PushNotification.self, from: data) else { return nil }
        self.init(decoded)
    }

    /// What the notification is about.
    public var subject: PushSubject {
        if let diaryID, let entryID { return .newEntry(diaryID: diaryID, entryID: entryID) }
        return .reminder
    }
}

/// What a push notification is about, to route the tap.
public enum PushSubject: Sendable, Hashable {
    /// A member wrote an entry: open it.
    case newEntry(diaryID: String, entryID: String)
    /// The daily reminder to write.
    case reminder
}
