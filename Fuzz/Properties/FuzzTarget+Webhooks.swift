import Foundation
import Logging
@testable package import DiaryCore
@testable import DiaryHTTP

extension FuzzTarget {
    /// A RevenueCat webhook body: read with the fields the reference reads from the same
    /// JSON, or refused as `Malformed` (400 `validation_failed`).
    static func checkRevenueCatEvent(_ bytes: [UInt8]) throws(PropertyViolation) {
        let event: RevenueCatEvent
        do {
            event = try RevenueCatEvent(json: Data(bytes))
        } catch {
            try require(!error.problem.isEmpty, "a refusal names no problem")
            return
        }
        guard let body = try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any], let fields = body["event"] as? [String: Any] else {
            throw PropertyViolation("an event is read from a body that is not a JSON object with an event")
        }
        try require(event.id == fields["id"] as? String, "the event id \(event.id) is not the body's")
        try require(event.type == fields["type"] as? String, "the event type \(event.type) is not the body's")
        try require(event.productID == fields["product_id"] as? String, "the product \(event.productID ?? "nil") is not the body's")
        try require(["PRODUCTION", "SANDBOX"].contains(event.environment), "the environment \(event.environment) is accepted")
        if let user = fields["app_user_id"] as? String {
            try require(event.userIDs.first == user, "app_user_id \(user) is not the first user id")
        }
        try require(event.userIDs.allSatisfy { !$0.isEmpty }, "an empty user id is accepted")
    }

    /// What the verifier makes of the Apple target's input.
    package static func verifyAppleNotification(_ bytes: [UInt8]) -> Result<AppleNotification, any Error> {
        var input = FuzzInput(bytes)
        let selector = input.byte()
        let rest = input.rest()
        let payload = selector & 1 == 1 ? String(decoding: rest, as: UTF8.self) : FuzzSigningKey.shared.sign(claims: rest)
        let verifier = FuzzSigningKey.shared.verifier
        return FuzzSigningKey.run { () async -> Result<AppleNotification, any Error> in
            do { return .success(try await verifier.verifyNotification(payload, now: appleNow)) } catch { return .failure(error) }
        }
    }

    /// When the Apple target signs the claims it is given, as Apple would on the fuzzing day.
    static let appleNow = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01

    /// Sign in with Apple's notification: the first byte says whether the rest is a whole
    /// `payload` (odd) or claims the target signs with its own key, which the verifier trusts
    /// (even), so that the accepting paths are reached too. Verified, with the reference's
    /// jti, subject and type, or refused as `Failure` (400), never another error (a 500).
    static func checkAppleNotification(_ bytes: [UInt8]) throws(PropertyViolation) {
        var input = FuzzInput(bytes)
        let selector = input.byte()
        let rest = input.rest()
        let notification: AppleNotification
        switch verifyAppleNotification(bytes) {
        case .success(let verified):
            notification = verified
        case .failure(let error):
            try require(error is AppleIdentityVerifier.Failure, "the notification is refused with \(error), which the route answers with a 500")
            return
        }
        // JSONSerialization and jwt-kit's JSONDecoder may keep different copies of a repeated key.
        let claimsData = Data(rest)
        guard selector & 1 == 0, JSONDuplicateKeys.first(in: claimsData) == nil,
            let claims = try? JSONSerialization.jsonObject(with: claimsData) as? [String: Any],
            let eventsText = claims["events"] as? String, JSONDuplicateKeys.first(in: Data(eventsText.utf8)) == nil,
            let events = try? JSONSerialization.jsonObject(with: Data(eventsText.utf8)) as? [String: Any]
        else { return }
        try require(notification.id == claims["jti"] as? String, "the notification's id \(notification.id) is not its jti")
        try require(notification.subject == events["sub"] as? String, "the notification's subject \(notification.subject) is not its event's")
        try require(notification.type == events["type"] as? String, "the notification's type \(notification.type) is not its event's")
    }
}
