import Foundation
import NIOConcurrencyHelpers
import PostgresClient

/// At most `limit` wrong invite codes per user per `window`, so codes cannot be guessed
/// by brute force. Kept in memory: a restart forgets, which costs an attacker nothing
/// they could not get by waiting a minute.
final class JoinAttemptLimiter: Sendable {
    let limit: Int
    let window: Duration
    private let failures = NIOLockedValueBox([UUID: [Date]]())

    init(limit: Int = 10, window: Duration = .seconds(60)) {
        self.limit = limit
        self.window = window
    }

    /// Seconds until the user may try again, or nil if they may try now.
    func retryAfter(for user: UUID, now: Date = Date()) -> Int? {
        failures.withLockedValue { failures in
            let recent = (failures[user] ?? []).filter { now.timeIntervalSince($0) < window.totalSeconds }
            failures[user] = recent.isEmpty ? nil : recent
            guard recent.count >= limit, let oldest = recent.first else { return nil }
            return max(1, Int((window.totalSeconds - now.timeIntervalSince(oldest)).rounded(.up)))
        }
    }

    func recordFailure(for user: UUID, now: Date = Date()) {
        failures.withLockedValue { failures in
            failures[user, default: []].append(now)
            if failures.count > 100_000 {
                // Bound memory: drop users with nothing recent.
                failures = failures.filter { $0.value.contains { now.timeIntervalSince($0) < window.totalSeconds } }
            }
        }
    }
}
