package import S3Client
package import DiaryCore
import ServiceLifecycle

/// Photo settings: where the bytes go, the URL key, and the sweeper's timing.
package struct PhotoConfiguration: Sendable {
    /// `PHOTO_STORE_DIR`; nil is `photos` in the data folder.
    package var storeDirectory: String?
    /// `PHOTO_STORE=s3`: the bucket, and the prefix of every object's key. Nil keeps photos in
    /// the folder.
    package var s3: (bucket: S3Configuration, prefix: String)?
    /// `DIARY_URL_KEY_FILE`; nil outside production is a key generated in the data folder.
    package var urlKeyFile: String?
    package var sweeper = PhotoSweeper.Options()

    package init(storeDirectory: String? = nil, urlKeyFile: String? = nil) {
        self.storeDirectory = storeDirectory
        self.urlKeyFile = urlKeyFile
    }
}

/// Runs the photo sweeper beside the HTTP server.
struct PhotoService: Service {
    let sweeper: PhotoSweeper

    func run() async throws {
        await cancelWhenGracefulShutdown { await sweeper.run() }
    }
}
