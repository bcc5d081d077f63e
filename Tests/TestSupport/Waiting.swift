/// The one way a test waits for something to happen: poll every 20 ms until it has, for at
/// most `limit`, and fail naming `what` if it never does. Never a fixed sleep.
public func waitUntil(_ what: String = "the condition", within limit: Duration = .seconds(10), _ condition: () async throws -> Bool) async throws {
    _ = try await waitForValue(what, within: limit) { try await condition() ? true : nil }
}

/// `waitUntil`, for a value that appears: returns it once `value` gives one.
public func waitForValue<Value>(_ what: String = "a value", within limit: Duration = .seconds(10), _ value: () async throws -> Value?) async throws -> Value {
    let deadline = ContinuousClock.now + limit
    while true {
        if let found = try await value() { return found }
        guard ContinuousClock.now < deadline else { throw TimedOut(what: what, limit: limit) }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// Runs `operation`, and fails naming `what` if it has not finished within `limit`; the
/// operation is cancelled then. The one way a test bounds a wait that has no poll.
public func withTimeLimit<Value: Sendable>(
    _ what: String, within limit: Duration, _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    try await withThrowingTaskGroup(of: Value?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let value = try await group.next()! else { throw TimedOut(what: what, limit: limit) }
        return value
    }
}

/// Spaces out a test's own actions: a load's rate, a resend, a fault injected while load
/// runs. It never stands in for "something has happened" or "nothing more happens"; those
/// are `waitUntil` and an observation.
public func pace(_ interval: Duration) async throws {
    try await Task.sleep(for: interval)
}

/// `pace`, to a point on a schedule.
public func pace(until instant: ContinuousClock.Instant) async throws {
    try await Task.sleep(until: instant, clock: .continuous)
}

/// What `waitUntil`, `waitForValue` and `withTimeLimit` throw when the time is up.
public struct TimedOut: Error, CustomStringConvertible {
    public let what: String
    public let limit: Duration
    public var description: String { "\(what) did not happen within \(limit)" }
}
