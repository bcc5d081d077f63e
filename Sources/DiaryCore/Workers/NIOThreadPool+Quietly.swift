package import NIOPosix

extension NIOThreadPool {
    /// Runs `body` on the pool and waits for it, ignoring a pool that is shutting down: for
    /// clean-up after a failure, which must not hide the failure.
    package func runIfActiveQuietly(_ body: @escaping @Sendable () -> Void) async {
        _ = try? await runIfActive(body)
    }
}
