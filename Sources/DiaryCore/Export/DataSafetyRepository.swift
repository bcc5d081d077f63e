package import DiaryModels
import Foundation
import PostgresClient

/// What the Data Safety Center shows: the newest backup, whether it was restored and
/// matched, how many entries the caller's diaries hold (their counters, not a count), and
/// the diaries they left that are still kept: what will happen to each, and when.
package struct DataSafetyRepository: Sendable {
    let scope: RequestScope

    package init(scope: RequestScope) {
        self.scope = scope
    }

    /// The newest backup and the caller's diaries' entries: counters, never a count of entries.
    static let summaryStatement: PostgresQuery = """
        with newest as (select finished_at, verified from backup_runs order by finished_at desc limit 1)
        select (select finished_at from newest) as last_backup_at,
            (select max(verified_at) from backup_runs where verified) as last_verified_at,
            coalesce((select verified from newest), false) as backup_verified,
            (select coalesce(sum(diaries.entry_count), 0) from diaries where \(DiariesPolicy.select.using))::bigint as entries_protected
        """

    /// `backupsEnabled`: this deployment takes backups (`BACKUP_DIR`); without them the
    /// times are null, whatever an old record says.
    package func status(backupsEnabled: Bool, departureWindow: Duration, departureWindowDays: Int) async throws -> DataSafety {
        let departures = try await DepartureRepository(scope: scope, window: departureWindow).list()
        let rows = try await scope.read(Self.summaryStatement)
        guard let row = rows.first else { throw DomainError(.internal, "the data safety read returned no row") }
        let entries: Int = try row.decode("entries_protected")
        guard backupsEnabled else {
            return DataSafety(
                lastBackupAt: nil, lastVerifiedAt: nil, backupVerified: false, entriesProtected: entries,
                departureWindowDays: departureWindowDays, departures: departures)
        }
        return DataSafety(
            lastBackupAt: try row.decode("last_backup_at"), lastVerifiedAt: try row.decode("last_verified_at"),
            backupVerified: try row.decode("backup_verified"), entriesProtected: entries,
            departureWindowDays: departureWindowDays, departures: departures)
    }
}
