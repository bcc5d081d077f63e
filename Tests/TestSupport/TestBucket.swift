import Foundation
import S3Client

/// The S3 bucket `make test` serves with moto's S3 server (`scripts/moto.sh`): its endpoint,
/// region, name and key, from TEST_S3_*. Path-style, as moto is addressed.
public enum TestBucket {
    public static func configuration() throws -> S3Configuration {
        let environment = ProcessInfo.processInfo.environment
        guard let endpoint = environment["TEST_S3_ENDPOINT"].flatMap(URL.init(string:)), let bucket = environment["TEST_S3_BUCKET"],
              let key = environment["TEST_S3_ACCESS_KEY_ID"], let secret = environment["TEST_S3_SECRET_ACCESS_KEY"]
        else { throw SpawnError("TEST_S3_* is not set: run the tests with `make test`, which starts moto (scripts/moto.sh)") }
        return S3Configuration(
            endpoint: endpoint, region: environment["TEST_S3_REGION"] ?? "us-east-1", bucket: bucket, pathStyle: true,
            credentials: S3Credentials(accessKeyID: key, secretAccessKey: secret))
    }

    /// The bucket of the same name on moto's instance without access checks
    /// (TEST_S3_OPEN_ENDPOINT), where presigned GETs are answered: any key signs.
    public static func openConfiguration() throws -> S3Configuration {
        var bucket = try configuration()
        guard let endpoint = ProcessInfo.processInfo.environment["TEST_S3_OPEN_ENDPOINT"].flatMap(URL.init(string:)) else {
            throw SpawnError("TEST_S3_OPEN_ENDPOINT is not set: run the tests with `make test`, which starts moto (scripts/moto.sh)")
        }
        bucket.endpoint = endpoint
        return bucket
    }
}
