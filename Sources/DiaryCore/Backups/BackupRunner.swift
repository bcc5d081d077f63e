import Foundation
package import Logging
import NIOCore
package import NIOPosix
package import PostgresClient

/// Makes one backup (`diary-server backup`, `BackupScheduler`): a pg_dump of one snapshot,
/// what that snapshot held (row counts, the entries' checksum), and the photo files it names.
///
/// Runs as the schema's owner, which must have BYPASSRLS (roles.sql gives it; migration 0004
/// requires it): every table forces its row-level policies, pg_dump refuses to dump a table
/// a policy would filter, and `backup_runs` takes no rows from anyone else. The counts run
/// with row_security off too, so a role without it fails loudly rather than counting less.
///
/// The backup is built in `.<name>.partial/` and renamed into place once its manifest is
/// written and fsynced: an interrupted run leaves nothing that looks complete. Photos go to
/// the directory's shared `photos/`, copied only when their hash is not there yet, checked
/// against their name on the way.
package struct BackupRunner: Sendable {
    package struct Result: Sendable {
        package var folder: String
        package var manifest: BackupManifest
        package var photosCopied: Int
        package var photosPresent: Int
        package var bytesCopied: Int64
        /// Hashes the database still names whose files the source store lacks or holds
        /// with other bytes: lost at the source, not by the backup. The caller reports them.
        package var lostPhotos: [String]
    }

    /// A role without the rights the backups need. The server's message names the table or
    /// the right, never row data, so it is shown.
    package struct NotAllowed: Error, CustomStringConvertible {
        package var description: String

        static func check(_ error: any Error, _ what: String) -> any Error {
            guard let error = error as? PostgresError, error.kind == .insufficientPrivilege else { return error }
            return NotAllowed(description: "\(what): \(error.message)")
        }
    }

    /// A Citus coordinator: pg_dump of its database holds the tables but none of the rows on
    /// the workers, a backup that would look whole and restore empty diaries.
    package struct OnCitusCluster: Error, CustomStringConvertible {
        package var description: String {
            "this database is a Citus coordinator, whose pg_dump holds none of the workers' rows: back the cluster up node by node with Citus's own tools (docs/cluster.md)"
        }
    }

    package struct NotRecorded: Error, CustomStringConvertible {
        package var folder: String
        package var reason: String
        package var description: String { "the backup in \(folder) is complete, but recording it in backup_runs failed: \(reason)" }
    }

    /// Every table in schema public and its rows. query_to_xml counts each table inside the
    /// calling transaction, so all counts and the dump share one snapshot.
    static let tableCounts: PostgresQuery = """
        select t.tablename as name,
            (xpath('/row/n/text()', query_to_xml(format('select count(*) as n from %I.%I', t.schemaname, t.tablename), false, true, '')))[1]::text::bigint as rows
        from pg_tables t where t.schemaname = 'public' order by 1
        """
    /// Order-independent and sensitive to duplicates: the sum of each row's hash. The row's
    /// text depends on TimeZone (created_at), so callers set it to UTC first.
    static let entriesChecksum: PostgresQuery = """
        select count(*) as count,
            coalesce(sum(('x' || substr(md5(row(id, diary_id, content, question, created_at)::text), 1, 15))::bit(60)::bigint::numeric), 0)::text as checksum
        from entries
        """
    static let namedPhotos: PostgresQuery = """
        select content_hash as hash, max(bytes) as bytes
        from (select content_hash, bytes from photo_uploads union all select content_hash, bytes from entry_photos) p
        group by content_hash order by 1
        """

    let pool: PostgresPool
    let store: any PhotoStore
    let pgDump: ExternalTool
    let logger: Logger
    let threadPool: NIOThreadPool

    /// `pool` logs in as the schema's owner; `store` is the server's photo store.
    package init(pool: PostgresPool, store: any PhotoStore, pgDump: ExternalTool, logger: Logger, threadPool: NIOThreadPool = .singleton) {
        self.pool = pool
        self.store = store
        self.pgDump = pgDump
        self.logger = logger
        self.threadPool = threadPool
    }

    /// Makes a backup in `directory` (created if need be) and records it in `backup_runs`.
    package func backup(into directory: String) async throws -> Result {
        let citus = try await pool.query("select exists (select from pg_extension where extname = 'citus') as citus")
        guard try citus.first?.decode("citus", as: Bool.self) == false else { throw OnCitusCluster() }
        let started = Date()
        let (layout, lock, target) = try await threadPool.runIfActive {
            // Backups hold every user's diary: the folders are the server user's alone.
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let layout = BackupLayout(root: directory)
            let lock = try BackupFiles.lockDirectory(layout.root)
            do {
                return (layout, lock, try FolderPhotoStore(root: layout.photos, threadPool: self.threadPool))
            } catch {
                BackupFiles.unlock(lock)
                throw error
            }
        }
        defer { BackupFiles.unlock(lock) }
        let name = try await threadPool.runIfActive { try Self.newFolder(in: layout, at: started) }
        let partial = "\(layout.root)/.\(name).partial"
        var result: Result
        do {
            let snapshot = try await dump(to: "\(partial)/\(BackupManifest.dumpFileName)")
            let pgDumpVersion = try await pgDump.run(["--version"])
            let dump = try await threadPool.runIfActive { try BackupFiles.sha256(ofFile: "\(partial)/\(BackupManifest.dumpFileName)") }
            let copy = try await copyPhotos(snapshot.photos, into: target)
            let manifest = BackupManifest(
                format: BackupManifest.currentFormat, createdAt: snapshot.takenAt, serverVersion: snapshot.serverVersion,
                pgDumpVersion: pgDumpVersion, database: .init(file: BackupManifest.dumpFileName, sha256: dump.hash, bytes: dump.bytes),
                tables: snapshot.tables, entries: snapshot.entries, photos: copy.kept, missingPhotos: copy.missing
            )
            let data = try manifest.encoded()
            result = Result(
                folder: layout.folder(name), manifest: manifest, photosCopied: copy.copied, photosPresent: copy.present,
                bytesCopied: copy.bytes, lostPhotos: copy.lost
            )
            try await threadPool.runIfActive {
                try BackupFiles.writeNew(data, to: "\(partial)/\(BackupManifest.fileName)")
                try BackupFiles.synchronize("\(partial)/\(BackupManifest.dumpFileName)", directory: false)
                try BackupFiles.synchronize(partial, directory: true)
                try BackupFiles.move(partial, to: layout.folder(name))
                try BackupFiles.synchronize(layout.root, directory: true)
            }
        } catch {
            await threadPool.runIfActiveQuietly { try? FileManager.default.removeItem(atPath: partial) }
            throw error
        }
        do {
            try await pool.query("""
                insert into backup_runs (started_at, finished_at, location, entry_count, entries_checksum)
                values (\(started), now(), \(result.folder), \(result.manifest.entries.count), \(result.manifest.entries.checksum))
                """)
        } catch {
            throw NotRecorded(folder: result.folder, reason: "\(NotAllowed.check(error, "the role needs BYPASSRLS to write backup_runs"))")
        }
        return result
    }

    /// Records a verification of the backup in `location`; false if no run names it (a
    /// backup made against another database).
    package static func recordVerification(pool: PostgresPool, location: String, verified: Bool) async throws -> Bool {
        let rows = try await pool.query("update backup_runs set verified_at = now(), verified = \(verified) where location = \(location)")
        return rows.affectedRows > 0
    }

    /// The first free name for a backup made at `date`, its partial folder created.
    static func newFolder(in layout: BackupLayout, at date: Date) throws -> String {
        let base = BackupLayout.name(for: date)
        for suffix in 1...999 {
            let name = suffix == 1 ? base : "\(base)-\(suffix)"
            let partial = "\(layout.root)/.\(name).partial"
            guard !FileManager.default.fileExists(atPath: layout.folder(name)), !FileManager.default.fileExists(atPath: partial) else { continue }
            try FileManager.default.createDirectory(atPath: partial, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
            return name
        }
        throw BackupFiles.Failure(description: "no free backup name in \(layout.root) for \(base)")
    }

    struct Snapshot {
        var takenAt: Date
        var serverVersion: String
        var tables: [String: Int64]
        var entries: BackupManifest.Entries
        var photos: [(hash: String, bytes: Int)]
    }

    /// Reads what the snapshot holds and runs pg_dump on the same snapshot while the
    /// exporting transaction stays open.
    func dump(to file: String) async throws -> Snapshot {
        var dumpConnection = pool.configuration
        dumpConnection.applicationName = "diary-server backup"
        return try await pool.withConnection { connection in
            try await connection.query(PostgresConnection.TransactionMode.snapshotReadOnly.begin)
            do {
                let results = try await connection.pipeline([
                    "set local timezone = 'UTC'",
                    "set local row_security = off",
                    "select pg_export_snapshot() as id, now() as taken_at, current_setting('server_version') as version",
                    Self.tableCounts, Self.entriesChecksum, Self.namedPhotos,
                ])
                let head = results[2][0]
                let snapshot = Snapshot(
                    takenAt: try head.decode("taken_at"), serverVersion: try head.decode("version"),
                    tables: try Self.counts(results[3]), entries: try Self.entries(results[4]),
                    photos: try results[5].map { (try $0.decode("hash", as: String.self), try $0.decode("bytes", as: Int.self)) }
                )
                let id: String = try head.decode("id")
                try await pgDump.run(["--format=custom", "--no-password", "--snapshot=\(id)", "--file=\(file)"], connection: dumpConnection)
                try await connection.query("commit")
                return snapshot
            } catch {
                _ = try? await connection.query("rollback")
                throw NotAllowed.check(error, "the backup's role must read every row, past the forced policies: it needs BYPASSRLS")
            }
        }
    }

    static func counts(_ rows: PostgresRows) throws -> [String: Int64] {
        var tables: [String: Int64] = [:]
        for row in rows { tables[try row.decode("name")] = try row.decode("rows", as: Int64.self) }
        return tables
    }

    static func entries(_ rows: PostgresRows) throws -> BackupManifest.Entries {
        BackupManifest.Entries(count: try rows[0].decode("count"), checksum: try rows[0].decode("checksum"))
    }

    struct PhotoCopy {
        var copied = 0
        var present = 0
        var bytes: Int64 = 0
        var kept: [String] = []
        var missing: [String] = []
        var lost: [String] = []
    }

    /// Copies each named photo not in `target` yet, after the snapshot's transaction ended:
    /// holding it open would hold back vacuum for the whole copy.
    func copyPhotos(_ photos: [(hash: String, bytes: Int)], into target: FolderPhotoStore) async throws -> PhotoCopy {
        var copy = PhotoCopy()
        for (hash, length) in photos {
            try Task.checkCancellation()
            if try await target.contains(hash) {
                copy.present += 1
                copy.kept.append(hash)
                continue
            }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(length)
            do {
                try await store.read(hash, range: 0..<length) { chunk in bytes.append(contentsOf: chunk.readableBytesView) }
            } catch is PhotoStoreError {
                bytes = []
            }
            let read = bytes
            if try await threadPool.runIfActive({ PhotoRepository.hash(read) }) == hash {
                try await target.put(read, hash: hash)
                copy.copied += 1
                copy.bytes += Int64(read.count)
                copy.kept.append(hash)
                continue
            }
            // Deleted since the snapshot and collected by a sweeper: the restore would name a
            // photo that was going anyway. Still named: lost at the source.
            copy.missing.append(hash)
            let named = try await pool.transaction([
                "set local row_security = off",
                """
                select exists (select 1 from photo_uploads where content_hash = \(hash))
                    or exists (select 1 from entry_photos where content_hash = \(hash)) as named
                """,
            ])
            if try named[1][0].decode("named", as: Bool.self) {
                copy.lost.append(hash)
                logger.error("backup: a photo the database names is not in the photo store", metadata: ["hash": "\(hash)"])
            }
        }
        return copy
    }
}
