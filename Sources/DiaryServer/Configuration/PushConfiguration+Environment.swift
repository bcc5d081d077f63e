import APNSClient
import DiaryCore
import DiaryHTTP
import Foundation

extension PushConfiguration {
    static let requiredVariables = ["APNS_KEY_FILE", "APNS_KEY_ID", "APNS_TEAM_ID", "APNS_TOPIC"]
    static let optionalVariables = ["APNS_ENDPOINT", "APNS_CA_FILE"]

    /// APNs from APNS_*: all four required variables, or push is off. In production, a
    /// half-configured APNs (some set, not all) refuses to start, naming what is missing.
    static func fromEnvironment(production: Bool, _ environment: [String: String] = Setting.environment) throws -> PushConfiguration {
        func value(_ name: String) -> String? { Setting.string(flag: nil, environment: name, in: environment) }
        var push = PushConfiguration()
        let lease = try Setting.integer(flag: nil, environment: "PUSH_LEASE_SECONDS", default: 30, range: 4...600)
        push.delivery.lease = .seconds(lease)
        let missing = requiredVariables.filter { value($0) == nil }
        let present = (requiredVariables + optionalVariables).filter { value($0) != nil }
        if !missing.isEmpty {
            if production && !present.isEmpty {
                throw ConfigurationError(description: "APNs is half-configured: \(missing.joined(separator: ", ")) not set (set all of \(requiredVariables.joined(separator: ", ")), or none)")
            }
            push.offReason = "\(missing.joined(separator: ", ")) not set"
            return push
        }
        let keyFile = value("APNS_KEY_FILE")!
        let key = try Setting.fileText(keyFile, variable: "APNS_KEY_FILE")
        var endpoint: URL?
        if let text = value("APNS_ENDPOINT") {
            guard let url = URL(string: text), url.scheme == "https", url.host != nil else {
                throw ConfigurationError(description: "APNS_ENDPOINT must be an https URL, not \"\(text)\"")
            }
            endpoint = url
        }
        if let caFile = value("APNS_CA_FILE"), !FileManager.default.isReadableFile(atPath: caFile) {
            throw ConfigurationError(description: "APNS_CA_FILE: cannot read \(caFile)")
        }
        var apns = APNSConfiguration(
            privateKeyPEM: key, keyID: value("APNS_KEY_ID")!, teamID: value("APNS_TEAM_ID")!, topic: value("APNS_TOPIC")!,
            endpoint: endpoint, extraTrustedCAFile: value("APNS_CA_FILE"))
        // A request never outlives its row's lease, so a row is never sent twice by two live servers.
        apns.requestTimeout = min(apns.requestTimeout, .seconds(lease / 2))
        do {
            try apns.validateKey()
        } catch {
            throw ConfigurationError(description: "APNS_KEY_FILE: \(keyFile) is not a P-256 private key in PEM (a .p8 file): \(error)")
        }
        push.apns = apns
        return push
    }
}
