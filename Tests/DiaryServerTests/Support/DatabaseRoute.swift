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

enum DatabaseRoute: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case direct
    /// Through PgBouncer in transaction mode, statements unnamed (`TestDatabase.viaPgBouncer`).
    case pgBouncer

    var testDescription: String { rawValue }
}
