package import Foundation

/// The fields of a RevenueCat webhook event that the plan depends on, read strictly: a body
/// that is not RevenueCat's shape is refused whole, naming the field, and nothing of it is
/// recorded, so that RevenueCat's retry of a corrected body is processed.
package struct RevenueCatEvent: Sendable, Equatable {
    package var id: String
    package var type: String
    /// app_user_id, original_app_user_id and aliases, in that order. Ours are user ids.
    package var userIDs: [String]
    package var transferredFrom: [String]
    package var transferredTo: [String]
    package var productID: String?
    package var entitlementIDs: [String]
    /// nil: no end (a lifetime purchase), or an event that carries none.
    package var expiration: Date?
    package var timestamp: Date
    /// PRODUCTION or SANDBOX.
    package var environment: String

    package var isSandbox: Bool { environment == "SANDBOX" }

    package struct Malformed: Error, Equatable, Sendable {
        package var field: String
        package var problem: String
    }

    /// Longer than any id RevenueCat sends; the database holds ids to 200 characters.
    static let maximumTextLength = 200
    static let maximumListLength = 100

    package init(json data: Data) throws(Malformed) {
        guard let object = try? JSONSerialization.jsonObject(with: data), let body = object as? [String: Any] else {
            throw Malformed(field: "", problem: "the body is not a JSON object")
        }
        guard let event = body["event"] as? [String: Any] else { throw Malformed(field: "event", problem: "is required, an object") }
        let fields = Fields(event)
        id = try fields.text("id")
        type = try fields.text("type")
        guard let timestamp = try fields.milliseconds("event_timestamp_ms") else {
            throw Malformed(field: "event.event_timestamp_ms", problem: "is required")
        }
        self.timestamp = timestamp
        // A TRANSFER is about users, not a purchase, and may carry no environment.
        environment = try type == "TRANSFER" ? fields.optionalText("environment") ?? "PRODUCTION" : fields.text("environment")
        guard ["PRODUCTION", "SANDBOX"].contains(environment) else {
            throw Malformed(field: "event.environment", problem: "must be PRODUCTION or SANDBOX")
        }
        expiration = try fields.milliseconds("expiration_at_ms")
        productID = try fields.optionalText("product_id")
        entitlementIDs = try fields.texts("entitlement_ids")
        transferredFrom = try fields.texts("transferred_from")
        transferredTo = try fields.texts("transferred_to")
        if type == "TRANSFER" {
            guard !transferredFrom.isEmpty else { throw Malformed(field: "event.transferred_from", problem: "is required for TRANSFER") }
            guard !transferredTo.isEmpty else { throw Malformed(field: "event.transferred_to", problem: "is required for TRANSFER") }
            userIDs = try [fields.optionalText("app_user_id"), fields.optionalText("original_app_user_id")].compactMap { $0 } + fields.texts("aliases")
        } else if type == "TEST" {
            userIDs = try [fields.optionalText("app_user_id")].compactMap { $0 }
        } else {
            userIDs = try [fields.text("app_user_id")] + [fields.optionalText("original_app_user_id")].compactMap { $0 } + fields.texts("aliases")
        }
    }

    /// An event's members, each checked for its type, with the field's path in errors.
    private struct Fields {
        let event: [String: Any]

        init(_ event: [String: Any]) { self.event = event }

        func optionalText(_ name: String) throws(Malformed) -> String? {
            guard let value = event[name], !(value is NSNull) else { return nil }
            guard let text = value as? String, !text.isEmpty, text.count <= RevenueCatEvent.maximumTextLength else {
                throw Malformed(field: "event.\(name)", problem: "must be a string of 1 to \(RevenueCatEvent.maximumTextLength) characters")
            }
            return text
        }

        func text(_ name: String) throws(Malformed) -> String {
            guard let text = try optionalText(name) else { throw Malformed(field: "event.\(name)", problem: "is required") }
            return text
        }

        func texts(_ name: String) throws(Malformed) -> [String] {
            guard let value = event[name], !(value is NSNull) else { return [] }
            guard let list = value as? [Any], list.count <= RevenueCatEvent.maximumListLength,
                  let texts = list as? [String], texts.allSatisfy({ !$0.isEmpty && $0.count <= RevenueCatEvent.maximumTextLength })
            else { throw Malformed(field: "event.\(name)", problem: "must be a list of strings") }
            return texts
        }

        /// Unix milliseconds, as RevenueCat writes times; null or absent is nil.
        func milliseconds(_ name: String) throws(Malformed) -> Date? {
            guard let value = event[name], !(value is NSNull) else { return nil }
            guard let number = value as? NSNumber,
                  let milliseconds = Int64(exactly: number.doubleValue), milliseconds >= 0, milliseconds < 32_503_680_000_000
            else { throw Malformed(field: "event.\(name)", problem: "must be a whole number of milliseconds since 1970") }
            return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
        }
    }
}
