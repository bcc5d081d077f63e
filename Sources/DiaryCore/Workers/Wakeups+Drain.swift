import Logging

extension Wakeups {
    /// A queue worker's one loop: each round claims a batch, acts on it and settles it, and
    /// claims again until a batch comes back short of `batchSize`. A failure ends the round;
    /// what was claimed comes back when its lease ends, so the next round retries it.
    func drainEachRound<Row: Sendable>(
        batchSize: Int, failure: Logger.Message, logger: Logger,
        claim: () async throws -> [Row], actAndSettle: ([Row]) async throws -> Void
    ) async {
        for await _ in rounds {
            while !Task.isCancelled {
                do {
                    let batch = try await claim()
                    if batch.isEmpty { break }
                    try await actAndSettle(batch)
                    if batch.count < batchSize { break }
                } catch {
                    logger.warning(failure, metadata: ["error": "\(error)"])
                    break
                }
            }
        }
    }
}
