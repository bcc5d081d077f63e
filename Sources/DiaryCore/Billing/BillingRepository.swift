package import Foundation
import Logging
package import PostgresClient

/// Records RevenueCat's events and applies them to users' plans (`record_billing_event`).
/// The webhook is RevenueCat's server calling ours: no user is signed in.
package struct BillingRepository: Sendable {
    let pool: PostgresPool

    package init(pool: PostgresPool) {
        self.pool = pool
    }

    /// What an event did: applied, duplicate, older, ignored, sandbox or unknown_user.
    package func record(_ event: RevenueCatEvent, couple: Bool, accepted: Bool, body: Data) async throws -> String {
        let rows = try await pool.query("""
            select record_billing_event(\(event.id), \(event.type), \(event.userIDs), \(event.transferredFrom), \(event.transferredTo),
                \(event.productID), \(couple), \(event.expiration), \(event.timestamp), \(event.environment), \(accepted),
                \(String(decoding: body, as: UTF8.self))::jsonb) as outcome
            """)
        return try rows.first?.decode("outcome", as: String.self) ?? "unknown"
    }
}
