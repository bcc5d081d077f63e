import DiaryCore
import Foundation
import Hummingbird
import Logging
import NIOFoundationEssentialsCompat

/// `POST /v1/webhooks/revenuecat`: RevenueCat tells us of purchases, renewals, expirations.
///
/// Anything but 200 makes RevenueCat retry, so every well-formed event gets 200, whatever
/// it did (a repeat, an older event, an unknown user, a type we do not act on): the
/// outcome is in the answer and in the log. Only a wrong Authorization (401) and a body
/// that is not RevenueCat's (400, nothing recorded) are refused.
struct RevenueCatWebhookRoutes {
    static let maximumBytes = 64 * 1024

    let configuration: BillingConfiguration
    let billing: BillingRepository

    struct Outcome: ResponseEncodable {
        var status: String
    }

    func register(on router: RouterGroup<AppRequestContext>) {
        router.post("webhooks/revenuecat") { request, context -> Outcome in
            guard let expected = configuration.webhookAuthorization else { throw Problem.notFound("no such route") }
            guard Self.constantTimeEquals(request.headers[.authorization] ?? "", expected) else {
                throw Problem.unauthorized("the webhook's Authorization header is not the one configured")
            }
            let body = Data(buffer: try await request.collectBody(upTo: Self.maximumBytes))
            let event: RevenueCatEvent
            do {
                event = try RevenueCatEvent(json: body)
            } catch let malformed as RevenueCatEvent.Malformed {
                throw Problem.validation(field: malformed.field, malformed.problem)
            }
            let couple = event.productID.map { configuration.coupleProducts.contains($0) } ?? false
            let accepted = !event.isSandbox || configuration.acceptSandbox
            let outcome = try await billing.record(event, couple: couple, accepted: accepted, body: body)
            context.logger.info("revenuecat event", metadata: [
                "event": "\(event.id)", "type": "\(event.type)", "outcome": "\(outcome)", "environment": "\(event.environment)",
                "product": "\(event.productID ?? "-")", "users": "\(event.userIDs.prefix(3).joined(separator: ","))",
            ])
            return Outcome(status: outcome)
        }
    }

    /// Equal strings in time that depends on their lengths only.
    static func constantTimeEquals(_ given: String, _ expected: String) -> Bool {
        let a = Array(given.utf8), b = Array(expected.utf8)
        guard a.count == b.count else { return false }
        return zip(a, b).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
