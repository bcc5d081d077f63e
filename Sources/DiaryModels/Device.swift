public import Foundation

/// `PUT /v1/me/devices/{deviceToken}`.
public struct RegisterDeviceRequest: Codable, Sendable {
    /// "sandbox" or "production": which of Apple's hosts the token belongs to.
    public var environment: String

    public init(environment: String) {
        self.environment = environment
    }
}

/// A device that receives the caller's push notifications.
public struct Device: Codable, Sendable, Equatable {
    /// The APNs device token, lower-case hex.
    public var token: String
    public var environment: String
    public var createdAt: Date

    public init(token: String, environment: String, createdAt: Date) {
        self.token = token
        self.environment = environment
        self.createdAt = createdAt
    }
}

/// `GET /v1/me/devices`.
public struct DeviceList: Codable, Sendable, Equatable {
    public var devices: [Device]

    public init(devices: [Device]) {
        self.devices = devices
    }
}
