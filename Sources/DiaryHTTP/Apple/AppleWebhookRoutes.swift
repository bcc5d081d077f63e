import DiaryCore
import Foundation
import Hummingbird
import Logging
import Metrics

/// `POST /v1/webhooks/apple`: Sign in with Apple's server-to-server notifications,
/// `{"payload": "<JWS>"}` signed with Apple's keys.
///
/// A notification that verifies gets 200 whatever it did (a repeat by `jti`, an account we
/// do not know, an event type we do not act on): the outcome is in the answer and the log.
/// One that does not verify gets 400 and changes nothing.
struct AppleWebhookRoutes {
    let verifier: AppleIdentityVerifier
    let notifications: AppleNotificationRepository
    let revoker: AppleTokenRevoker
    let photoSweeper: PhotoSweeper

    struct Notification: Decodable {
        var payload: String
    }

    struct Outcome: ResponseEncodable {
        var status: String
    }

    static let knownTypes: Set<String> = ["consent-revoked", "account-delete", "email-disabled", "email-enabled"]

    func register(on router: RouterGroup<AppRequestContext>) {
        router.post("webhooks/apple") { request, context -> Outcome in
            let body = try await request.decode(as: Notification.self, context: context)
            let notification: AppleNotification
            do {
                notification = try await verifier.verifyNotification(body.payload)
            } catch let failure as AppleIdentityVerifier.Failure {
                context.logger.warning("apple notification refused", metadata: ["reason": "\(failure)"])
                Counter(label: "apple_notifications_total", dimensions: [("type", "unknown"), ("outcome", "refused")]).increment()
                throw Problem(.badRequest, detail: "the notification is not signed by Apple for this app")
            }
            let outcome = try await notifications.apply(notification)
            if outcome == "account_deleted" {
                photoSweeper.collectSoon()
                revoker.wake()
            }
            let type = Self.knownTypes.contains(notification.type) ? notification.type : "other"
            Counter(label: "apple_notifications_total", dimensions: [("type", type), ("outcome", outcome)]).increment()
            context.logger.info("apple notification", metadata: [
                "jti": "\(notification.id)", "type": "\(notification.type)", "outcome": "\(outcome)",
            ])
            return Outcome(status: outcome)
        }
    }
}
