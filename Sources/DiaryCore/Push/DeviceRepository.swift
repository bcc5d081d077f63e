package import DiaryModels
import Foundation
import PostgresClient

/// The caller's devices, as the caller (see `RequestScope`).
package struct DeviceRepository: Sendable {
    let scope: RequestScope

    package init(scope: RequestScope) {
        self.scope = scope
    }

    /// The most devices one user has; registering one more replaces the one registered longest ago.
    package static let maximumDevices = 20

    /// `token` is already lower-case hex (see `DeviceToken`). Bound to the caller's session:
    /// once it ends, the device gets no more pushes.
    package func register(token: String, environment: String) async throws {
        _ = try await scope.run("select register_device(\(token), \(environment), \(scope.identity.sessionID))")
    }

    package func remove(token: String) async throws {
        _ = try await scope.run("delete from devices where devices.token = \(token) and \(DevicesPolicy.delete.using)")
    }

    package func list() async throws -> DeviceList {
        let rows = try await scope.read("""
            select token, environment, created_at from devices
            where \(DevicesPolicy.select.using)
            order by created_at, token
            """)
        return DeviceList(devices: try rows.map {
            Device(token: try $0.decode("token"), environment: try $0.decode("environment"), createdAt: try $0.decode("created_at"))
        })
    }
}
