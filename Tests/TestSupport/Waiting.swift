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
        guard ContinuousClock.now < deadline else { throw SpawnError("\(what) did not happen within \(limit)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}
