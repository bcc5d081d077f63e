import Foundation
import Metrics
import PostgresClient

/// What both schedulers, dumps (`BackupScheduler`) and restore points (`RestorePointScheduler`),
/// report, under the same names, so one alert watches either.
enum BackupMetrics {
    /// A run that made its backup: how long it took, and, if it is sound, when it succeeded;
    /// if not, one more failure.
    static func recordMade(after duration: Duration, healthy: Bool) {
        Timer(label: "backup_duration_seconds", dimensions: [], preferredDisplayUnit: .seconds).recordSeconds(duration.totalSeconds)
        if healthy {
            Gauge(label: "backup_last_success_timestamp_seconds", dimensions: []).record(Date().timeIntervalSince1970)
        } else {
            recordFailure()
        }
    }

    static func recordFailure() {
        Counter(label: "backup_failures_total", dimensions: []).increment()
    }
}
