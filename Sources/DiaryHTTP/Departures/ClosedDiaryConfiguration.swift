import DiaryCore
import PostgresClient

/// How long a departure keeps a member's own entries theirs to export, and a closed diary (its
/// last member left) is kept for its former members to restore, and how often the closed-diary
/// worker looks for what no notification woke it for, deletion dates that arrive among them.
package struct ClosedDiaryConfiguration: Sendable {
    /// `CLOSED_DIARY_RETENTION_DAYS`; `CLOSED_DIARY_RETENTION_SECONDS` outside production, so
    /// that a test can watch a purge.
    package var window: Duration
    /// `CLOSED_DIARY_ROUND_SECONDS`.
    package var round: Duration

    package init(window: Duration = .seconds(30 * 86_400), round: Duration = .seconds(600)) {
        self.window = window
        self.round = round
    }

    /// The window in whole days, as the Data Safety Center states it: at least one.
    package var windowDays: Int {
        max(1, Int((window.wholeSeconds + 86_399) / 86_400))
    }

    /// The closed-diary worker's options.
    var workerOptions: ClosedDiaryWorker.Options {
        var options = ClosedDiaryWorker.Options(window: window)
        options.pollInterval = round
        return options
    }
}
