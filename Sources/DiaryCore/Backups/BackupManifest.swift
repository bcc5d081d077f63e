#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
package import Foundation

/// `manifest.json` of one backup: what the snapshot held, for `verify-backup` to compare a
/// restore with. A backup counts as complete only once its folder holds this file.
package struct BackupManifest: Codable, Sendable, Equatable {
    package static let currentFormat = 1
    package static let fileName = "manifest.json"
    package static let dumpFileName = "database.dump"

    package struct DatabaseDump: Codable, Sendable, Equatable {
        /// The file in the backup's folder, in pg_dump's custom format (`-Fc`).
        package var file: String
        package var sha256: String
        package var bytes: Int64
    }

    package struct Entries: Codable, Sendable, Equatable {
        package var count: Int64
        /// Order-independent sum over every entry's (id, diary_id, content, question,
        /// created_at in UTC): `BackupSnapshot.entriesChecksumQuery`.
        package var checksum: String
    }

    /// The layout's version; a reader checks it before anything else.
    package var format: Int
    /// The snapshot's time: the transaction the dump shares.
    package var createdAt: Date
    /// PostgreSQL's `server_version` at the source.
    package var serverVersion: String
    package var pgDumpVersion: String
    package var database: DatabaseDump
    /// Rows of every table in schema public, by name.
    package var tables: [String: Int64]
    package var entries: Entries
    /// Content hashes of the photo files the backup holds, in `photos/` beside the backups.
    package var photos: [String]
    /// Hashes the snapshot named whose files the store no longer held, or held with other
    /// bytes, when they were copied.
    package var missingPhotos: [String]

    package func encoded() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }

    package static func decode(_ data: Data) throws -> BackupManifest {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try decoder.decode(BackupManifest.self, from: data)
    }
}

/// The backup directory: `<UTC timestamp>/` per backup (`database.dump`, `manifest.json`),
/// `photos/ab/<hash>` shared by all of them, and `.<timestamp>.partial/` while one is built.
package struct BackupLayout: Sendable {
    package let root: String

    /// `root` made absolute, so that the location recorded in `backup_runs` is the same
    /// whichever folder the backup and its verification ran from.
    package init(root: String) {
        self.root = BackupFiles.absolute(root)
    }

    package var photos: String { "\(root)/photos" }

    package func folder(_ name: String) -> String { "\(root)/\(name)" }

    package func photo(_ hash: String) -> String { "\(photos)/\(hash.prefix(2))/\(hash)" }

    /// `20261125T101500Z`: sorts by time, and names no other file in the directory.
    package static func name(for date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: date)
    }

    package static func isBackupName(_ name: String) -> Bool {
        name.wholeMatch(of: /[0-9]{8}T[0-9]{6}Z(-[0-9]{1,3})?/) != nil
    }

    /// The complete backups' folder names, oldest first. A partial one is hidden and has no manifest.
    package func completeBackups() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return names.filter { Self.isBackupName($0) && FileManager.default.fileExists(atPath: "\(folder($0))/\(BackupManifest.fileName)") }
            .sorted { Self.order($0) < Self.order($1) }
    }

    /// A second backup within the same second takes `-2`, then `-3`.
    static func order(_ name: String) -> (String, Int) {
        (String(name.prefix(16)), Int(name.dropFirst(17)) ?? 1)
    }

    /// Stray folders of runs that never finished.
    package func partialFolders() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).filter { $0.hasPrefix(".") && $0.hasSuffix(".partial") }
    }
}

/// Blocking file work for the backups; callers run it on NIO's thread pool.
package enum BackupFiles {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
        init(_ what: String, _ path: String, _ code: Int32 = errno) {
            description = "\(what) \(path): \(String(cString: strerror(code)))"
        }
    }

    package static func absolute(_ path: String) -> String {
        let url = URL(fileURLWithPath: path).standardizedFileURL
        return url.resolvingSymlinksInPath().path
    }

    /// Lower-case hex SHA-256 of the file and its length, read a megabyte at a time.
    package static func sha256(ofFile path: String) throws -> (hash: String, bytes: Int64) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure("open", path) }
        defer { close(fd) }
        var hasher = SHA256()
        var total: Int64 = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure("read", path)
            }
            if count == 0 { break }
            buffer.withUnsafeBytes { hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
            total += Int64(count)
        }
        return (hasher.finalize().map { String(format: "%02x", $0) }.joined(), total)
    }

    /// Writes `data` to `path`, created new, and fsyncs it.
    package static func writeNew(_ data: Data, to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure("open", path) }
        defer { close(fd) }
        try data.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw Failure("write", path)
                }
                offset += written
            }
        }
        guard fsync(fd) == 0 else { throw Failure("fsync", path) }
    }

    /// fsyncs a file or a directory (which makes the names in it durable).
    package static func synchronize(_ path: String, directory: Bool) throws {
        let fd = open(path, (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC)
        guard fd >= 0 else { throw Failure("open", path) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw Failure("fsync", path) }
    }

    package static func move(_ from: String, to: String) throws {
        guard rename(from, to) == 0 else { throw Failure("rename", from) }
    }

    /// An exclusive lock on `root/.lock` for as long as the returned descriptor stays open:
    /// one writer at a time in a backup directory, across processes (a `backup` command
    /// beside a server's scheduler). Throws at once if another holds it.
    package static func lockDirectory(_ root: String) throws -> Int32 {
        let path = "\(root)/.lock"
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure("open", path) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            close(fd)
            if code == EWOULDBLOCK { throw Failure(description: "another backup is writing to \(root)") }
            throw Failure("flock", path, code)
        }
        return fd
    }

    package static func unlock(_ fd: Int32) {
        close(fd)
    }
}

extension BackupFiles.Failure {
    init(description: String) {
        self.description = description
    }
}
