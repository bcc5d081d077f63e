import Foundation
package import Logging
package import NIOPosix
package import PostgresClient

/// Checks one backup (`diary-server verify-backup`, `BackupScheduler`): the dump's own hash,
/// then a restore into a scratch database whose every table's rows and entries' checksum
/// must equal what the snapshot recorded, then every photo file's hash.
///
/// The scratch database `diary_verify_<random>` is created through `scratch`, whose role
/// needs CREATEDB only: it restores without owners or grants, so it owns what it restores,
/// and it lifts FORCE ROW LEVEL SECURITY there before counting, so no policy hides a row
/// from it. The scratch database is dropped in every case.
package struct BackupVerifier: Sendable {
    package struct Report: Sendable {
        /// The backup's folder, as `backup_runs.location` names it.
        package var folder: String
        package var tablesCompared = 0
        package var entries: Int64 = 0
        package var photosChecked = 0
        /// Each way the backup differs from its manifest; empty means it verified.
        package var differences: [String] = []
        /// What the manifest itself says is absent: photos gone from the source's store.
        package var notes: [String] = []

        package var verified: Bool { differences.isEmpty }
    }

    let scratch: PostgresConfiguration
    let pgRestore: ExternalTool
    let logger: Logger
    let threadPool: NIOThreadPool

    /// `scratch` connects to any database of the server to restore on, as a role that may
    /// CREATE DATABASE.
    package init(scratch: PostgresConfiguration, pgRestore: ExternalTool, logger: Logger, threadPool: NIOThreadPool = .singleton) {
        self.scratch = scratch
        self.pgRestore = pgRestore
        self.logger = logger
        self.threadPool = threadPool
    }

    /// The backup in `path`: a backup's folder, or a backup directory, whose newest complete backup it takes.
    package static func resolve(_ path: String) throws -> (layout: BackupLayout, name: String) {
        let absolute = BackupFiles.absolute(path)
        if FileManager.default.fileExists(atPath: "\(absolute)/\(BackupManifest.fileName)") {
            let url = URL(fileURLWithPath: absolute)
            return (BackupLayout(root: url.deletingLastPathComponent().path), url.lastPathComponent)
        }
        let layout = BackupLayout(root: absolute)
        guard let newest = layout.completeBackups().last else {
            throw BackupFiles.Failure(description: "\(path) holds no complete backup (no \(BackupManifest.fileName))")
        }
        return (layout, newest)
    }

    package func verify(_ path: String) async throws -> Report {
        let (layout, name) = try await threadPool.runIfActive { try Self.resolve(path) }
        let folder = layout.folder(name)
        var report = Report(folder: folder)
        let manifest: BackupManifest
        do {
            manifest = try BackupManifest.decode(try await threadPool.runIfActive {
                try Data(contentsOf: URL(fileURLWithPath: "\(folder)/\(BackupManifest.fileName)"))
            })
        } catch {
            report.differences.append("\(BackupManifest.fileName): cannot be read: \(error)")
            return report
        }
        guard manifest.format == BackupManifest.currentFormat else {
            report.differences.append("\(BackupManifest.fileName): format \(manifest.format), this server reads \(BackupManifest.currentFormat)")
            return report
        }
        let dumpPath = "\(folder)/\(manifest.database.file)"
        let dump = try? await threadPool.runIfActive { try BackupFiles.sha256(ofFile: dumpPath) }
        if let dump, dump.hash == manifest.database.sha256, dump.bytes == manifest.database.bytes {
            try await compareRestore(of: dumpPath, with: manifest, into: &report)
        } else if let dump {
            report.differences.append(
                "\(manifest.database.file): corrupt: sha256 \(dump.hash) (\(dump.bytes) bytes), the manifest says \(manifest.database.sha256) (\(manifest.database.bytes) bytes); not restored")
        } else {
            report.differences.append("\(manifest.database.file): missing or unreadable; not restored")
        }
        for hash in manifest.photos {
            let file = layout.photo(hash)
            let found = try? await threadPool.runIfActive { try BackupFiles.sha256(ofFile: file) }
            report.photosChecked += 1
            if let found {
                if found.hash != hash { report.differences.append("photo \(hash): its file's sha256 is \(found.hash)") }
            } else {
                report.differences.append("photo \(hash): missing from \(layout.photos)")
            }
        }
        if !manifest.missingPhotos.isEmpty {
            report.notes.append("\(manifest.missingPhotos.count) photo(s) were not in the source's store when the backup was made: \(manifest.missingPhotos.joined(separator: ", "))")
        }
        return report
    }

    /// Restores the dump into a new scratch database, compares it with the manifest, and
    /// drops the database, whatever happened.
    func compareRestore(of dumpPath: String, with manifest: BackupManifest, into report: inout Report) async throws {
        let database = "diary_verify_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var target = scratch
        target.database = database
        target.applicationName = "diary-server verify-backup"
        do {
            try await withAdminPool { try await $0.query(PostgresQuery(unsafeSQL: "create database \(database)")) }
        } catch {
            throw BackupRunner.NotAllowed.check(error, "the scratch role needs CREATEDB (or give a scratch database URL)")
        }
        do {
            do {
                try await pgRestore.run(["--no-owner", "--no-privileges", "--exit-on-error", "--no-password", "--dbname=\(database)", dumpPath], connection: target)
            } catch let failure as ExternalTool.Failure {
                report.differences.append("\(manifest.database.file): the restore failed: \(failure)")
                try await dropScratch(database)
                return
            }
            let pool = PostgresPool(configuration: target, options: .init(size: 1, acquireTimeout: .seconds(60)), logger: logger)
            let results: [PostgresRows]
            do {
                results = try await pool.transaction([
                    """
                    do $$ declare t record; begin
                        for t in select schemaname, tablename from pg_tables where schemaname = 'public' loop
                            execute format('alter table %I.%I no force row level security', t.schemaname, t.tablename);
                        end loop;
                    end $$
                    """,
                    "set local timezone = 'UTC'",
                    "set local row_security = off",
                    BackupRunner.tableCounts, BackupRunner.entriesChecksum,
                ])
                try await pool.close()
            } catch {
                try? await pool.close()
                throw error
            }
            let restored = try BackupRunner.counts(results[3])
            let entries = try BackupRunner.entries(results[4])
            for (table, rows) in manifest.tables.sorted(by: { $0.key < $1.key }) {
                guard let found = restored[table] else {
                    report.differences.append("table \(table): missing from the restore (\(rows) rows in the manifest)")
                    continue
                }
                report.tablesCompared += 1
                if found != rows { report.differences.append("table \(table): \(found) rows restored, \(rows) in the manifest") }
            }
            for table in restored.keys.sorted() where manifest.tables[table] == nil {
                report.differences.append("table \(table): restored, but not in the manifest")
            }
            report.entries = entries.count
            if entries != manifest.entries {
                report.differences.append(
                    "entries: checksum \(entries.checksum) over \(entries.count) restored, \(manifest.entries.checksum) over \(manifest.entries.count) in the manifest")
            }
        } catch {
            try? await dropScratch(database)
            throw error
        }
        try await dropScratch(database)
    }

    /// A plain DROP first: it stops an autovacuum worker analysing the fresh restore itself,
    /// where FORCE, run by a role that is not a superuser, fails with 42501 on that superuser
    /// process. FORCE only for a connection of ours that has not gone yet.
    func dropScratch(_ database: String) async throws {
        do {
            try await withAdminPool { try await $0.query(PostgresQuery(unsafeSQL: "drop database if exists \(database)")) }
        } catch let error as PostgresError where error.sqlState == .objectInUse {
            try await withAdminPool { try await $0.query(PostgresQuery(unsafeSQL: "drop database if exists \(database) with (force)")) }
        }
    }

    func withAdminPool(_ body: (PostgresPool) async throws -> Void) async throws {
        let pool = PostgresPool(configuration: scratch, options: .init(size: 1, acquireTimeout: .seconds(60)), logger: logger)
        do {
            try await body(pool)
            try await pool.close()
        } catch {
            try? await pool.close()
            throw error
        }
    }
}
