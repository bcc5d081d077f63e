import ArgumentParser
import DiaryCore
import DiaryHTTP
import S3Client
import Foundation
import Logging
import PostgresClient

/// The backups' tools and the photo store, from a flag, else the environment. `serve`'s
/// automatic backups (`BackupScheduler.Options`) read them the same way.
enum BackupTools {
    static func pgDump(flag: String?) throws -> ExternalTool {
        try ExternalTool.locate("pg_dump", override: Setting.string(flag: flag, environment: "PG_DUMP"), searchPath: Setting.string(flag: nil, environment: "PATH"))
    }

    static func pgRestore(flag: String?) throws -> ExternalTool {
        try ExternalTool.locate("pg_restore", override: Setting.string(flag: flag, environment: "PG_RESTORE"), searchPath: Setting.string(flag: nil, environment: "PATH"))
    }

    /// The store photos are read from: the folder the flag names; else the bucket with
    /// PHOTO_STORE=s3; else the folder `photoStore(flag:)` finds.
    static func configuredPhotoStore(flag: String?) throws -> ConfiguredPhotoStore {
        if flag == nil, let s3 = try PhotoConfiguration.fromEnvironment(production: false).s3 {
            return .bucket(s3.bucket, prefix: s3.prefix)
        }
        return .folder(try photoStore(flag: flag))
    }

    /// The folder store `serve` uses: PHOTO_STORE_DIR, else `photos` in DIARY_DATA_DIR (.data).
    /// It must exist: a mistyped path would otherwise back up an empty store.
    static func photoStore(flag: String?) throws -> FolderPhotoStore {
        let directory = Setting.string(flag: flag, environment: "PHOTO_STORE_DIR")
            ?? ((Setting.string(flag: nil, environment: "DIARY_DATA_DIR") ?? ".data") as NSString).appendingPathComponent("photos")
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ConfigurationError(description: "the photo store \(directory) is not a folder; give it with --photo-store or PHOTO_STORE_DIR")
        }
        return try FolderPhotoStore(root: directory)
    }

    /// Where verification makes its scratch databases: the flag, BACKUP_SCRATCH_DATABASE_URL,
    /// else nil (the owner's connection).
    static func scratchDatabase(flag: String?) throws -> PostgresConfiguration? {
        guard Setting.string(flag: flag, environment: "BACKUP_SCRATCH_DATABASE_URL") != nil else { return nil }
        return try Setting.databaseURL(flag: flag, environment: "BACKUP_SCRATCH_DATABASE_URL")
    }
}
