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
            do {
                try await drainBatches(batchSize: batchSize) {
                    let batch = try await claim()
                    if !batch.isEmpty { try await actAndSettle(batch) }
                    return batch.count
                }
            } catch {
                logger.warning(failure, metadata: ["error": "\(error)"])
            }
        }
    }
}

/// Runs `batch`, which handles at most `batchSize` things and says how many it did, until one
/// handles fewer: a queue drained a transaction at a time. A failure ends it, and is thrown.
func drainBatches(batchSize: Int, _ batch: () async throws -> Int) async throws {
    while !Task.isCancelled {
        if try await batch() < batchSize { return }
    }
}
