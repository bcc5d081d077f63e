import Foundation

/// Blocking work (a `recv`, a `waitpid`, reading a child's output to its end) on a thread of
/// its own.
///
/// Swift's cooperative pool has one thread per core: two on the machines CI runs on. A test
/// that blocks one of them halves the speed of every other suite running beside it, and
/// the servers those suites run in-process; two such tests at once stop them all. So no
/// test blocks on the pool: it awaits `OffPool.run` instead.
public enum OffPool {
    public static func run<Result: Sendable>(_ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(with: Swift.Result { try body() })
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }
}
