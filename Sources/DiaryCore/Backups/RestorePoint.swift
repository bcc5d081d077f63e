package import Foundation
package import Logging
package import PostgresClient

/// A named restore point (`diary-server restore-point`): on a Citus coordinator taken on every node at once (`citus_create_restore_point`, which
/// holds off writes that span nodes for the moment it takes, so the nodes' points agree); on
/// one PostgreSQL, `pg_create_restore_point`. Each node's base backup and WAL archive
/// (pgBackRest) restores it to that point. Recorded in
/// `backup_runs` with the entries' count and checksum at that moment, so the Data Safety
/// Center reports it as the newest backup.
package enum RestorePoint {
    package struct Taken: Sendable {
        package var name: String
        package var citus: Bool
        package var location: String { "\(Self.locationPrefix)\(name)" }
        package static let locationPrefix = "restore-point:"
    }

    package struct InvalidName: Error, CustomStringConvertible {
        package var name: String
        package var description: String { "\"\(name)\" is not a restore point's name: 1 to 63 ASCII letters, digits or -_.:" }
    }

    /// Names as PostgreSQL keeps them (at most 63 bytes), and as a shell passes them on.
    package static func isValidName(_ name: String) -> Bool {
        (1...63).contains(name.utf8.count) && name.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_.:".unicodeScalars.contains($0)) }
    }

    /// `diary-20261128T164500Z`: sorts by time, and says when.
    package static func defaultName(at date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withYear, .withMonth, .withDay, .withTime, .withTimeZone]
        return "diary-" + formatter.string(from: date).replacingOccurrences(of: "-", with: "").replacingOccurrences(of: ":", with: "")
    }

    /// Takes the point and records it. `pool` logs in as a superuser: PostgreSQL keeps
    /// `pg_create_restore_point` to superusers unless granted, and Citus's is superusers' only.
    /// Throws on an invalid name before anything happens.
    package static func take(named name: String, pool: PostgresPool, logger: Logger) async throws -> Taken {
        guard isValidName(name) else { throw InvalidName(name: name) }
        let started = Date()
        let citus = try await pool.query("select exists (select from pg_extension where extname = 'citus') as citus")[0].decode("citus", as: Bool.self)
        if citus {
            try await pool.query("select citus_create_restore_point(\(name))")
        } else {
            try await pool.query("select pg_create_restore_point(\(name))")
        }
        let taken = Taken(name: name, citus: citus)
        try await pool.withTransaction { connection in
            // The checksum's row text holds created_at, which depends on TimeZone.
            try await connection.query("set local timezone = 'UTC'")
            try await connection.query("""
                insert into backup_runs (started_at, finished_at, location, entry_count, entries_checksum)
                select \(started), now(), \(taken.location), count, checksum from (\(BackupRunner.entriesChecksum)) e
                """)
        }
        logger.notice("restore point taken", metadata: ["name": "\(name)", "everyNode": "\(citus)"])
        return taken
    }
}
