package import DiaryCore
package import S3Client

/// Photo settings: where the bytes go, the URL key, and the sweeper's timing.
package struct PhotoConfiguration: Sendable {
    /// `PHOTO_STORE_DIR`; nil is `photos` in the data folder.
    package var storeDirectory: String?
    /// `PHOTO_STORE=s3`: the bucket, and the prefix of every object's key. Nil keeps photos in
    /// the folder.
    package var s3: (bucket: S3Configuration, prefix: String)?
    /// `DIARY_URL_KEY_FILE`; nil outside production is a key generated in the data folder.
    package var urlKeyFile: String?
    /// `PHOTO_URLS`: who serves photos' bytes (`presigned` needs the bucket).
    package var urls: URLs = .server
    /// How long a request to the bucket may wait for its answer's head; a body that stops
    /// coming is cut by the shared HTTP client's read timeout.
    package var storeTimeout: Duration = .seconds(30)
    package var sweeper = PhotoSweeper.Options()

    package init(storeDirectory: String? = nil, urlKeyFile: String? = nil) {
        self.storeDirectory = storeDirectory
        self.urlKeyFile = urlKeyFile
    }
}

extension PhotoConfiguration {
    package enum URLs: String, Sendable, CaseIterable {
        /// This server streams them from the store, behind its own signed URLs.
        case server
        /// The bucket does, behind presigned GET URLs.
        case presigned
    }
}
