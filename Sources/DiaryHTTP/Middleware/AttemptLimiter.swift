import Foundation
import NIOConcurrencyHelpers
import PostgresClient

/// At most `limit` recorded attempts per key per `window`: wrong invite codes per user (so
/// codes cannot be guessed by brute force through a join), invite pages per client address
/// (nor through the page). Kept in memory: a restart forgets, which costs an attacker nothing
/// they could not get by waiting a window.
final class AttemptLimiter<Key: Hashable & Sendable>: Sendable {
    let limit: Int
    let window: Duration
    /// Keys held before the ones with nothing recent are dropped, which bounds the memory.
    let keysKept: Int
    private let attempts = NIOLockedValueBox([Key: [Date]]())

    init(limit: Int, window: Duration = .seconds(60), keysKept: Int = 100_000) {
        self.limit = limit
        self.window = window
        self.keysKept = keysKept
    }

    /// Seconds until `key` may try again, or nil if it may try now.
    func retryAfter(for key: Key, now: Date = Date()) -> Int? {
        attempts.withLockedValue { attempts in
            let recent = (attempts[key] ?? []).filter { now.timeIntervalSince($0) < window.totalSeconds }
            attempts[key] = recent.isEmpty ? nil : recent
            guard recent.count >= limit, let oldest = recent.first else { return nil }
            return max(1, Int((window.totalSeconds - now.timeIntervalSince(oldest)).rounded(.up)))
        }
    }

    func record(for key: Key, now: Date = Date()) {
        attempts.withLockedValue { attempts in
            attempts[key, default: []].append(now)
            if attempts.count > keysKept {
                attempts = attempts.filter { $0.value.contains { now.timeIntervalSince($0) < window.totalSeconds } }
            }
        }
    }

    /// Records an attempt unless `key` is over its limit: nil when it may go ahead, else the
    /// seconds until it may try again.
    func admit(_ key: Key, now: Date = Date()) -> Int? {
        if let wait = retryAfter(for: key, now: now) { return wait }
        record(for: key, now: now)
        return nil
    }
}
