import DiaryAPI
import Foundation

/// Whether this app can use the service now, from `GET /v1/service-status`, before any call fails.
public enum Availability: Sendable, Hashable {
    /// Everything works.
    case available
    /// Reads work, writes answer `maintenance` until it ends.
    case maintenance
    /// This app version is below the minimum: only an update helps (exports still work).
    case upgradeRequired(minimumVersion: String)
}

extension DiaryClient {
    /// The service's status: maintenance, the minimum app version and notices. Needs no sign-in.
    public func serviceStatus() async throws -> ServiceStatus {
        ServiceStatus(try await perform { try await api.getServiceStatus().ok.body.json })
    }

    /// Whether this app (`Configuration.appVersion`) can use the service now: call it at
    /// launch and on returning to the foreground, to show an update or maintenance screen
    /// before a call fails.
    public func availability() async throws -> Availability {
        let status = try await serviceStatus()
        if let minimum = status.minimumAppVersion, let version = configuration.appVersion,
           AppVersion(version) < AppVersion(minimum) {
            return .upgradeRequired(minimumVersion: minimum)
        }
        return status.maintenance ? .maintenance : .available
    }
}

/// An `x.y.z` version, compared part by part as the server compares them (missing parts are 0).
struct AppVersion: Comparable {
    let parts: [Int]

    init(_ text: String) {
        let numbers = text.split(separator: ".").map { Int($0) ?? 0 }
        parts = numbers + Array(repeating: 0, count: max(0, 3 - numbers.count))
    }

    static func < (lhs: AppVersion, rhs: AppVersion) -> Bool { lhs.parts.lexicographicallyPrecedes(rhs.parts) }
}
