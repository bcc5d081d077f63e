/// How long to wait before the next try of something that failed: `base` × 2^(attempt − 1),
/// at most `cap`, times a factor drawn from `jitter`, so that servers that failed together
/// do not all try again together.
///
/// The one shape of a retry delay in the server. It lives here, below DiaryCore, because the
/// LISTEN connection (`PostgresListener`) retries too; a worker that retries per row keeps the
/// attempt count with the row, and a loop keeps it in `Backoff.Attempts`.
public struct Backoff: Sendable, Equatable {
    public var base: Duration
    public var cap: Duration
    /// The factor each delay is multiplied by, drawn uniformly: `1...1` for none.
    public var jitter: ClosedRange<Double>

    public init(base: Duration, cap: Duration, jitter: ClosedRange<Double> = 1...1) {
        precondition(base > .zero && cap >= base && jitter.lowerBound > 0, "a backoff needs 0 < base <= cap and a positive jitter")
        self.base = base
        self.cap = cap
        self.jitter = jitter
    }

    /// The wait after the `attempt`-th failure in a row (1 for the first).
    public func delay(attempt: Int) -> Duration {
        let doubled = base * (1 << min(max(attempt - 1, 0), 30))
        let capped = min(doubled, cap)
        return jitter.lowerBound == jitter.upperBound ? capped * jitter.lowerBound : capped * Double.random(in: jitter)
    }

    /// A loop's failures in a row: `failed()` gives the next wait, and `succeeded()` starts
    /// over, so that one failure after a long good run waits `base` again.
    public struct Attempts: Sendable {
        public let backoff: Backoff
        public private(set) var failures = 0

        public init(_ backoff: Backoff) {
            self.backoff = backoff
        }

        public mutating func failed() -> Duration {
            failures += 1
            return backoff.delay(attempt: failures)
        }

        public mutating func succeeded() {
            failures = 0
        }
    }
}
