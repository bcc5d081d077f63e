package import Foundation
import JWTKit

/// One of Apple's server-to-server notifications for Sign in with Apple, verified.
package struct AppleNotification: Sendable, Equatable {
    /// The token's `jti`: a notification is applied once.
    package var id: String
    /// consent-revoked, account-delete, email-disabled or email-enabled (others are ignored).
    package var type: String
    /// The Apple user (`sub`) the event is about.
    package var subject: String
    package var email: String?

    /// The JWS's claims: `events` is JSON text, not an object.
    struct Claims: JWTPayload {
        var iss: String
        var aud: AudienceClaim
        var iat: Double
        var jti: String
        var events: String

        func verify(using algorithm: some JWTAlgorithm) async throws {
            guard algorithm.name == "RS256" else { throw JWTError.unsupportedAlgorithm(alg: algorithm.name) }
        }
    }

    private struct Event: Decodable {
        var type: String
        var sub: String
        var email: String?
    }

    init(claims: Claims) throws {
        guard !claims.jti.isEmpty, claims.jti.utf8.count <= 255 else { throw AppleIdentityVerifier.Failure.invalid("bad jti") }
        let event: Event
        do {
            event = try JSONDecoder().decode(Event.self, from: Data(claims.events.utf8))
        } catch {
            throw AppleIdentityVerifier.Failure.invalid("the events claim is not an event")
        }
        guard !event.sub.isEmpty, event.sub.count <= 255 else { throw AppleIdentityVerifier.Failure.invalid("bad subject") }
        guard !event.type.isEmpty, event.type.utf8.count <= 64 else { throw AppleIdentityVerifier.Failure.invalid("bad event type") }
        id = claims.jti
        type = event.type
        subject = event.sub
        email = event.email.flatMap { $0.isEmpty || $0.count > 320 ? nil : $0 }
    }
}
