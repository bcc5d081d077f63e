import Foundation
import S3Client
import Testing
@testable import DiaryHTTP
@testable import DiaryServer

/// PHOTO_STORE and the S3_* settings, as `serve` reads them.
@Suite("Photo store settings")
struct PhotoConfigurationTests {
    static let complete = [
        "PHOTO_STORE": "s3", "S3_ENDPOINT": "https://s3.ap-northeast-1.amazonaws.com", "S3_REGION": "ap-northeast-1",
        "S3_BUCKET": "zutto-photos", "S3_ACCESS_KEY_ID": "AKIAEXAMPLE", "S3_SECRET_ACCESS_KEY": "secret", "S3_PREFIX": "prod-",
    ]

    @Test("the folder by default; s3 with every setting gives the bucket, its prefix and its addressing")
    func complete() throws {
        #expect(try PhotoConfiguration.fromEnvironment(production: true, [:]).s3 == nil)
        let s3 = try #require(try PhotoConfiguration.fromEnvironment(production: true, Self.complete).s3)
        #expect(s3.bucket.bucket == "zutto-photos" && s3.bucket.region == "ap-northeast-1" && s3.prefix == "prod-" && !s3.bucket.pathStyle)
        var pathStyle = Self.complete
        pathStyle["S3_PATH_STYLE"] = "1"
        #expect(try PhotoConfiguration.fromEnvironment(production: true, pathStyle).s3?.bucket.pathStyle == true)
    }

    @Test("s3 with settings missing refuses to start and names them; a secret can come from a file")
    func missing() throws {
        var partial = Self.complete
        partial["S3_REGION"] = nil
        partial["S3_SECRET_ACCESS_KEY"] = nil
        #expect {
            try PhotoConfiguration.fromEnvironment(production: false, partial)
        } throws: { error in
            "\(error)".contains("S3_REGION") && "\(error)".contains("S3_SECRET_ACCESS_KEY (or S3_SECRET_ACCESS_KEY_FILE)") && !"\(error)".contains("S3_BUCKET")
        }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("s3-secret-\(UUID().uuidString)")
        try Data("from-a-file\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        var fromFile = Self.complete
        fromFile["S3_SECRET_ACCESS_KEY"] = nil
        fromFile["S3_SECRET_ACCESS_KEY_FILE"] = file.path
        #expect(try PhotoConfiguration.fromEnvironment(production: true, fromFile).s3?.bucket.credentials.secretAccessKey == "from-a-file")
    }

    @Test("an http endpoint in production, a bad bucket name, an unknown store or stray S3 settings in production are refused")
    func refused() throws {
        for (name, value) in [("S3_ENDPOINT", "http://minio.internal:9000"), ("S3_BUCKET", "Bad_Bucket"), ("PHOTO_STORE", "ftp")] {
            var settings = Self.complete
            settings[name] = value
            #expect(throws: (any Error).self, "\(name)=\(value)") { try PhotoConfiguration.fromEnvironment(production: true, settings) }
        }
        var http = Self.complete
        http["S3_ENDPOINT"] = "http://127.0.0.1:9000"
        #expect(try PhotoConfiguration.fromEnvironment(production: false, http).s3 != nil, "http is fine outside production")
        #expect(throws: (any Error).self) { try PhotoConfiguration.fromEnvironment(production: true, ["S3_BUCKET": "zutto-photos"]) }
    }

    @Test("PHOTO_URLS: server by default; presigned with the bucket only; anything else is refused")
    func urls() throws {
        #expect(try PhotoConfiguration.fromEnvironment(production: true, Self.complete).urls == .server)
        var presigned = Self.complete
        presigned["PHOTO_URLS"] = "presigned"
        #expect(try PhotoConfiguration.fromEnvironment(production: true, presigned).urls == .presigned)
        #expect { try PhotoConfiguration.fromEnvironment(production: false, ["PHOTO_URLS": "presigned"]) } throws: { "\($0)".contains("PHOTO_STORE=s3") }
        presigned["PHOTO_URLS"] = "cdn"
        #expect { try PhotoConfiguration.fromEnvironment(production: false, presigned) } throws: { "\($0)".contains("PHOTO_URLS") }
    }
}
