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
///
/// The failure comes at `limit` even when the operation ignores its cancellation (a wait on
/// a task's value, a blocked read): a task group would wait for such a child before it
/// returned, so the operation runs in a task of its own, and is left to finish on its own.
public func withTimeLimit<Value: Sendable>(
    _ what: String, within limit: Duration, _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    let outcome = FirstOutcome<Value>()
    let work = Task {
        do { await outcome.settle(with: .success(try await operation())) } catch { await outcome.settle(with: .failure(error)) }
    }
    let timer = Task {
        do {
            try await Task.sleep(for: limit)
            await outcome.settle(with: .failure(TimedOut(what: what, limit: limit)))
        } catch {
            await outcome.settle(with: .failure(error))
        }
    }
    defer {
        work.cancel()
        timer.cancel()
    }
    return try await withTaskCancellationHandler {
        try await outcome.value.get()
    } onCancel: {
        work.cancel()
        timer.cancel()
    }
}

/// The first of several racing results; later ones are dropped.
private actor FirstOutcome<Value: Sendable> {
    private var result: Result<Value, any Error>?
    private var waiter: CheckedContinuation<Result<Value, any Error>, Never>?

    func settle(with result: Result<Value, any Error>) {
        guard self.result == nil else { return }
        self.result = result
        waiter?.resume(returning: result)
        waiter = nil
    }

    var value: Result<Value, any Error> {
        get async {
            if let result { return result }
            return await withCheckedContinuation { waiter = $0 }
        }
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
