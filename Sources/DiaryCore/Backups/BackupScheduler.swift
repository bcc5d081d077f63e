package import Foundation
package import Logging
import NIOPosix
package import PostgresClient

/// Automatic backups inside `serve` (`BACKUP_DIR`): when the newest complete backup in the
/// directory is older than the interval (`BackupSchedule`), one backup, its verification, and
/// pruning to the newest `keep`.
///
/// Every server checks, and the one that takes the advisory lock (`advisoryLockKey`, on a
/// connection of its own, held for the whole run) does the work; the others find either the
/// lock taken or the new backup fresh.
package final class BackupScheduler: Sendable {
    package struct Options: Sendable {
        /// `BACKUP_DIR`.
        package var directory: String
        package var schedule = BackupSchedule()
        /// `BACKUP_KEEP` (default 7): complete backups kept; photo files none of them names go too.
        package var keep = 7
        /// pg_dump and pg_restore, located by the caller (`PG_DUMP`, `PG_RESTORE`, else PATH).
        package var pgDump: ExternalTool
        package var pgRestore: ExternalTool
        /// Where `diary_verify_*` databases are made; nil is the pool's own connection,
        /// which must then be allowed to CREATE DATABASE.
        package var scratchDatabase: PostgresConfiguration?

        package init(directory: String, pgDump: ExternalTool, pgRestore: ExternalTool) {
            self.directory = directory
            self.pgDump = pgDump
            self.pgRestore = pgRestore
        }
    }

    package enum Outcome: Sendable, Equatable {
        /// The newest backup is younger than the interval.
        case notDue
        /// Another server holds the lock, and is backing up.
        case locked
        case backedUp(folder: String, verified: Bool)
        case failed(String)
    }

    /// pg_try_advisory_lock's key: "diarybku".
    package static let advisoryLockKey: Int64 = 0x6469_6172_7962_6B75

    let pool: PostgresPool
    let store: any PhotoStore
    let options: Options
    let logger: Logger

    /// `pool` logs in as the schema's owner (BYPASSRLS; MIGRATION_DATABASE_URL), with at least
    /// two connections: one holds the lock while the other works. It has no statement
    /// timeout, since counting every table may take longer than a request's. `store` is the
    /// server's photo store.
    package init(pool: PostgresPool, store: any PhotoStore, options: Options, logger: Logger) {
        precondition(pool.options.size >= 2, "the backup scheduler's pool needs two connections: the lock's and the work's")
        self.pool = pool
        self.store = store
        self.options = options
        self.logger = logger
    }

    /// Runs until cancelled.
    package func run() async {
        await options.schedule.run { _ = await self.tick() }
    }

    /// One look: backs up, verifies and prunes if a backup is due and no other server is at it.
    @discardableResult
    package func tick(at now: Date = Date()) async -> Outcome {
        let started = ContinuousClock.now
        do {
            return try await pool.whileHoldingAdvisoryLock(Self.advisoryLockKey) {
                try await backUpIfDue(at: now, started: started)
            } ?? .locked
        } catch where error is CancellationError || Task.isCancelled {
            // The server is stopping: the run's partial folder is gone and nothing failed.
            logger.info("backup interrupted by shutdown", metadata: ["directory": "\(options.directory)"])
            return .failed("cancelled")
        } catch {
            BackupMetrics.recordFailure()
            logger.error("backup failed; the next check tries again", metadata: ["directory": "\(options.directory)", "error": "\(error)"])
            return .failed("\(error)")
        }
    }

    func backUpIfDue(at now: Date, started: ContinuousClock.Instant) async throws -> Outcome {
        let directory = options.directory
        let (layout, newest) = try await NIOThreadPool.singleton.runIfActive {
            let layout = BackupLayout(root: directory)
            return (layout, layout.completeBackups().last.flatMap { Self.createdAt(of: layout.folder($0)) })
        }
        guard options.schedule.isDue(newest: newest, at: now) else { return .notDue }
        logger.info("backup starting", metadata: ["directory": "\(options.directory)"])
        let runner = BackupRunner(pool: pool, store: store, pgDump: options.pgDump, logger: logger)
        let result = try await runner.backup(into: options.directory)
        let duration = ContinuousClock.now - started
        logger.info("backup made", metadata: [
            "folder": "\(result.folder)", "seconds": "\(duration.totalSeconds)", "dumpBytes": "\(result.manifest.database.bytes)",
            "entries": "\(result.manifest.entries.count)", "photosCopied": "\(result.photosCopied)",
            "photoBytesCopied": "\(result.bytesCopied)", "photosAlreadyThere": "\(result.photosPresent)",
        ])
        var healthy = result.lostPhotos.isEmpty
        if !healthy {
            logger.error("backup: photos the database names are missing from the photo store", metadata: ["hashes": "\(result.lostPhotos)"])
        }

        let verifier = BackupVerifier(scratch: options.scratchDatabase ?? pool.configuration, pgRestore: options.pgRestore, logger: logger)
        let report = try await verifier.verify(result.folder)
        _ = try await BackupRunner.recordVerification(pool: pool, location: report.folder, verified: report.verified)
        if report.verified {
            logger.info("backup verified", metadata: [
                "folder": "\(report.folder)", "tables": "\(report.tablesCompared)", "entries": "\(report.entries)", "photos": "\(report.photosChecked)",
            ])
        } else {
            healthy = false
            logger.error("backup verification FAILED", metadata: ["folder": "\(report.folder)", "differences": "\(report.differences)"])
        }

        let pruned = try await prune(layout)
        if pruned.backups > 0 || pruned.photos > 0 {
            logger.info("backups pruned", metadata: ["backups": "\(pruned.backups)", "photos": "\(pruned.photos)", "kept": "\(options.keep)"])
        }
        let total = ContinuousClock.now - started
        BackupMetrics.recordMade(after: total, healthy: healthy)
        return .backedUp(folder: result.folder, verified: report.verified)
    }

    /// Removes all but the newest `keep` complete backups, partial folders of runs that
    /// died, and photo files no kept manifest names. Holds the directory's lock, so no
    /// backup is being written meanwhile.
    package func prune(_ layout: BackupLayout) async throws -> (backups: Int, photos: Int) {
        let keep = max(1, options.keep)
        let (lock, kept, removed, photos) = try await NIOThreadPool.singleton.runIfActive {
            let lock = try BackupFiles.lockDirectory(layout.root)
            do {
                let complete = layout.completeBackups()
                let removed = Array(complete.dropLast(keep))
                // Renamed partial first: a removal cut short leaves no folder that looks complete.
                for name in removed { try BackupFiles.move(layout.folder(name), to: layout.folder(".\(name).partial")) }
                for name in layout.partialFolders() { try FileManager.default.removeItem(atPath: layout.folder(name)) }
                var named: Set<String> = []
                for name in complete.suffix(keep) {
                    let data = try Data(contentsOf: URL(fileURLWithPath: "\(layout.folder(name))/\(BackupManifest.fileName)"))
                    named.formUnion(try BackupManifest.decode(data).photos)
                }
                return (lock, named, removed.count, try FolderPhotoStore(root: layout.photos))
            } catch {
                BackupFiles.unlock(lock)
                throw error
            }
        }
        defer { BackupFiles.unlock(lock) }
        var gone = 0
        try await photos.forEachObject(writtenBefore: .distantFuture) { page in
            for hash in page where !kept.contains(hash) {
                try await photos.remove(hash)
                gone += 1
            }
        }
        return (removed, gone)
    }

    static func createdAt(of folder: String) -> Date? {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: "\(folder)/\(BackupManifest.fileName)")) else { return nil }
        return try? BackupManifest.decode(data).createdAt
    }

}
