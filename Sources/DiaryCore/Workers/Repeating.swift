/// Runs `body` every `interval` until the task is cancelled; first at once, or after one
/// interval. Background workers' polls, checks and gauges all keep time this way.
func repeating(every interval: Duration, startingAtOnce: Bool = false, _ body: @Sendable () async -> Void) async {
    if startingAtOnce { await body() }
    while !Task.isCancelled {
        do { try await Task.sleep(for: interval) } catch { return }
        await body()
    }
}
