import NIOConcurrencyHelpers

/// Exports' limits, and whether this deployment takes backups.
package struct ExportConfiguration: Sendable {
    /// Exports one user may start per UTC day, diary and personal together.
    package var exportsPerDay = 10
    /// Exports streaming at once on this server. Each holds a database connection for as long
    /// as its client takes to download, so they are capped below the pool's size.
    package var concurrentExports = 4
    /// `BACKUP_DIR` is set: the Data Safety Center reports the backups.
    package var backupsEnabled = false

    package init(exportsPerDay: Int = 10, concurrentExports: Int = 4, backupsEnabled: Bool = false) {
        self.exportsPerDay = exportsPerDay
        self.concurrentExports = concurrentExports
        self.backupsEnabled = backupsEnabled
    }
}

/// Counts the exports streaming; a ticket leaves when its response is done with, sent or not.
final class ExportGate: Sendable {
    private let inFlight = NIOLockedValueBox(0)
    let limit: Int

    init(limit: Int) {
        self.limit = max(1, limit)
    }

    final class Ticket: Sendable {
        private let gate: ExportGate
        fileprivate init(gate: ExportGate) { self.gate = gate }
        deinit { gate.inFlight.withLockedValue { $0 -= 1 } }
    }

    /// nil when `limit` exports are already streaming.
    func enter() -> Ticket? {
        let admitted = inFlight.withLockedValue { count -> Bool in
            guard count < limit else { return false }
            count += 1
            return true
        }
        return admitted ? Ticket(gate: self) : nil
    }

    var streaming: Int { inFlight.withLockedValue { $0 } }
}
