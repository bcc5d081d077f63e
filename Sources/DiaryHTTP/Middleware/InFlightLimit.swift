import NIOConcurrencyHelpers

/// At most `limit` of something at once: requests at the door, exports streaming.
final class InFlightLimit: Sendable {
    let limit: Int
    private let count = NIOLockedValueBox(0)

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Whether one more fits; if so it counts until `leave()`.
    func tryEnter() -> Bool {
        count.withLockedValue { count in
            guard count < limit else { return false }
            count += 1
            return true
        }
    }

    func leave() { count.withLockedValue { $0 -= 1 } }

    /// For work that outlives the call that admits it (a streamed response): it leaves
    /// when the ticket is released, sent or not.
    final class Ticket: Sendable {
        private let limit: InFlightLimit
        fileprivate init(_ limit: InFlightLimit) { self.limit = limit }
        deinit { limit.leave() }
    }

    /// nil when `limit` are already in flight.
    func ticket() -> Ticket? {
        tryEnter() ? Ticket(self) : nil
    }
}
