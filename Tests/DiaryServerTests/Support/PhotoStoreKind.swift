import AsyncHTTPClient
import Crypto
import DiaryModels
import Foundation
import Hummingbird
import HummingbirdTesting
import PostgresClient
import S3Client
import Testing
import TestSupport
import _CryptoExtras
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// Where the application under test keeps photos' bytes.
enum PhotoStoreKind: Sendable, Equatable, CustomTestStringConvertible {
    /// A folder of its own (`FolderPhotoStore`).
    case folder
    /// moto's S3 server (`scripts/moto.sh`, TEST_S3_*), under a prefix of its own.
    case s3
    /// moto's open instance (TEST_S3_OPEN_ENDPOINT), photos served by presigned URL
    /// (`PHOTO_URLS=presigned`): moto answers presigned GETs only without access checks.
    case s3Presigned
    /// The checked bucket at another address: where nothing listens, or a `FaultyProxy`; the
    /// store's requests time out after 2 s.
    case s3At(URL)

    /// The same bucket at an address where nothing listens: a store that is down.
    static let s3Unreachable = PhotoStoreKind.s3At(URL(string: "http://127.0.0.1:1")!)

    /// The stores a photo test runs on.
    static let allCases: [PhotoStoreKind] = [.folder, .s3]

    var testDescription: String {
        switch self {
        case .folder: "folder"
        case .s3: "s3"
        case .s3Presigned: "s3, presigned"
        case .s3At(let endpoint): "s3 at \(endpoint)"
        }
    }
}
