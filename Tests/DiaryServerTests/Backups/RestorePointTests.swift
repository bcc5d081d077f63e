import DiaryModels
import Foundation
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP

@Suite("Restore points")
struct RestorePointTests {
    @Test("restore-point, as a superuser, takes a named point in the WAL and records it with the entries' count; the Data Safety Center reports it as the newest backup; a name a shell or PostgreSQL would mangle is refused before anything happens")
    func takesAndRecords() async throws {
        try await APIHarness.run(export: ExportConfiguration(backupsEnabled: true)) { api in
            let couple = try await EntryPhotoTests.couple(api)
            #expect(try await api.post("印", in: couple.diary.id, token: couple.alice.accessToken).status == .created)
            let superuser = try ServerProcess.url(of: api.database)
            let lsnBefore = try #require(try await api.asSuperuser("select pg_current_wal_lsn()::text as lsn").first?.decode("lsn", as: String.self))

            let taken = try await ServerProcess.runCommand(["restore-point", "--name", "before-the-move", "--database-url", superuser])
            #expect(taken.status == 0, "\(taken.output)")
            #expect(taken.output.split(separator: "\n").last == "before-the-move", "\(taken.output)")
            let recorded = try #require(try await api.asSuperuser("select location, entry_count from backup_runs order by finished_at desc limit 1").first)
            #expect(try recorded.decode("location", as: String.self) == "restore-point:before-the-move")
            #expect(try recorded.decode("entry_count", as: Int.self) == 1)
            // The point is a WAL record: the WAL moved past where it was.
            let moved = try await api.asSuperuser("select pg_current_wal_lsn() > \(lsnBefore)::pg_lsn as moved")
            #expect(try moved.first?.decode("moved", as: Bool.self) == true)
            let safety = try await api.call(.get, "/v1/data-safety", token: couple.bob.accessToken).decode(DataSafety.self)
            let reported = try #require(safety.lastBackupAt)
            #expect(abs(reported.timeIntervalSinceNow) < 300)

            let named = try await ServerProcess.runCommand(["restore-point", "--database-url", superuser])
            #expect(named.status == 0 && (named.output.split(separator: "\n").last?.hasPrefix("diary-") ?? false), "\(named.output)")

            for bad in ["x; drop table entries", "", String(repeating: "a", count: 64), "日記"] {
                let refused = try await ServerProcess.runCommand(["restore-point", "--name", bad, "--database-url", superuser])
                #expect(refused.status != 0 && refused.output.contains("is not a restore point's name"), "\(bad): \(refused.output)")
            }
            let count = try await api.asSuperuser("select count(*)::int8 as n from backup_runs")
            #expect(try count.first?.decode("n", as: Int.self) == 2)
        }
    }

    @Test("serve's scheduled restore points (RESTORE_POINT_DATABASE_URL): one when due, recorded and reported; none while another server holds the lock; none while the newest is younger than the interval, though a dump is newer")
    func scheduled() async throws {
        try await APIHarness.run(export: ExportConfiguration(backupsEnabled: true)) { api in
            let couple = try await EntryPhotoTests.couple(api)
            #expect(try await api.post("予定", in: couple.diary.id, token: couple.alice.accessToken).status == .created)
            var schedule = BackupSchedule()
            schedule.interval = .seconds(3600)
            try await TestDatabase.withPool(api.database, size: 2) { pool in
                let scheduler = RestorePointScheduler(pool: pool, schedule: schedule, logger: TestDatabase.logger)
                try await TestDatabase.withPool(api.database, size: 1) { other in
                    try await other.withConnection { connection in
                        try await connection.query("select pg_advisory_lock(\(RestorePointScheduler.advisoryLockKey))")
                        #expect(await scheduler.tick() == .locked)
                        try await connection.query("select pg_advisory_unlock(\(RestorePointScheduler.advisoryLockKey))")
                    }
                }
                let now = Date()
                #expect(await scheduler.tick(at: now) == .taken(name: RestorePoint.defaultName(at: now)))
                let recorded = try #require(try await api.asSuperuser("select location, entry_count from backup_runs order by finished_at desc limit 1").first)
                #expect(try recorded.decode("location", as: String.self) == "restore-point:\(RestorePoint.defaultName(at: now))")
                #expect(try recorded.decode("entry_count", as: Int.self) == 1)
                let safety = try await api.call(.get, "/v1/data-safety", token: couple.bob.accessToken).decode(DataSafety.self)
                #expect(abs(try #require(safety.lastBackupAt).timeIntervalSinceNow) < 300)

                // A dump's record is not a restore point: the interval counts from the newest point.
                try await api.asSuperuser("insert into backup_runs (started_at, finished_at, location, entry_count, entries_checksum) values (now(), now(), '/backups/dump', 1, '')")
                #expect(await scheduler.tick(at: now.addingTimeInterval(1800)) == .notDue)
                let later = now.addingTimeInterval(3600 + 5)
                #expect(await scheduler.tick(at: later) == .taken(name: RestorePoint.defaultName(at: later)))
                let points = try await api.asSuperuser("select count(*)::int8 as n from backup_runs where location like 'restore-point:%'")
                #expect(try points.first?.decode("n", as: Int.self) == 2)
            }
        }
    }
}
