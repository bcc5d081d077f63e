import Foundation

/// Cuts short the realtime stream's waits between connections: the app calls
/// `DiaryClient.reconnectRealtimeNow()` when it returns to the foreground or the network comes
/// back, and every stream waiting out its backoff connects at once.
final class RealtimeWakeup: @unchecked Sendable {
    private let lock = NSLock()
    private var sleepers: [UUID: AsyncStream<Void>.Continuation] = [:]
    /// A wake that found no stream waiting: the next wait is skipped, as the stream may have
    /// been between its close and its wait when the app came back.
    private var pending = false

    /// Ends every wait under way, or the next one if none is.
    func wakeAll() {
        let woken = lock.withLock {
            defer { sleepers = [:] }
            pending = sleepers.isEmpty
            return Array(sleepers.values)
        }
        for sleeper in woken { sleeper.finish() }
    }

    /// Waits `delay`, or less if woken; throws when the task is cancelled.
    func sleep(for delay: Duration) async throws {
        let (woken, continuation) = AsyncStream<Void>.makeStream()
        let id = UUID()
        let skip = lock.withLock {
            defer { pending = false }
            if !pending { sleepers[id] = continuation }
            return pending
        }
        if skip { return try Task.checkCancellation() }
        defer { _ = lock.withLock { sleepers.removeValue(forKey: id) } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await Task.sleep(for: delay) }
            group.addTask { for await _ in woken {} }
            try await group.next()
            group.cancelAll()
        }
        try Task.checkCancellation()
    }
}
