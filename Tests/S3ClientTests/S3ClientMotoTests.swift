import AsyncHTTPClient
import Foundation
import NIOCore
import Testing
import TestSupport
@testable import S3Client

/// The client against moto's S3 server with its access checks on (`scripts/moto.sh`, started
/// by `make test`): every request signed, path-style addressing.
@Suite("S3 client against moto")
struct S3ClientMotoTests {
    static func configuration(secret: String? = nil) throws -> S3Configuration {
        var configuration = try TestBucket.configuration()
        if let secret { configuration.credentials.secretAccessKey = secret }
        return configuration
    }

    static func withClient<Result>(secret: String? = nil, _ body: (S3Client) async throws -> Result) async throws -> Result {
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        do {
            let result = try await body(S3Client(configuration: try configuration(secret: secret), http: http))
            try await http.shutdown()
            return result
        } catch {
            try? await http.shutdown()
            throw error
        }
    }

    static func bytes(_ count: Int, seed: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }

    @Test("PUT, HEAD, GET whole and by range, LIST by prefix, DELETE, and a missing key is notFound")
    func roundTrip() async throws {
        try await Self.withClient { client in
            // No "/" in it: moto checks the signature of a LIST whose prefix holds one wrongly.
            let prefix = "tests-\(UUID().uuidString.lowercased())-"
            let photo = Self.bytes(300_000, seed: 7)
            try await client.put(prefix + "ab/photo one", bytes: photo, contentType: "image/jpeg")
            try await client.put(prefix + "cd/second", bytes: [1, 2, 3])
            #expect(try await client.head(prefix + "ab/photo one") == photo.count)
            #expect(try await client.head(prefix + "nothing") == nil)

            var whole: [UInt8] = []
            for try await chunk in try await client.get(prefix + "ab/photo one") { whole += chunk.readableBytesView }
            #expect(whole == photo)
            var part: [UInt8] = []
            for try await chunk in try await client.get(prefix + "ab/photo one", range: 1000..<1010) { part += chunk.readableBytesView }
            #expect(part == Array(photo[1000..<1010]))

            let (objects, next) = try await client.list(prefix: prefix, maxKeys: 1)
            #expect(objects.map(\.key) == [prefix + "ab/photo one"] && next != nil)
            let (rest, end) = try await client.list(prefix: prefix, continuation: next, maxKeys: 1)
            #expect(rest.map(\.key) == [prefix + "cd/second"] && rest.first?.size == 3 && end == nil)

            try await client.delete(prefix + "ab/photo one")
            try await client.delete(prefix + "ab/photo one")
            #expect(try await client.head(prefix + "ab/photo one") == nil)
            await #expect(throws: S3Error.notFound(operation: "GET", key: prefix + "ab/photo one")) {
                _ = try await client.get(prefix + "ab/photo one")
            }
        }
    }

    @Test("a wrong secret is refused 403 SignatureDoesNotMatch, and nothing is stored")
    func wrongSecret() async throws {
        let key = "tests/\(UUID().uuidString.lowercased())"
        _ = try await Self.withClient(secret: "not-the-secret") { client in
            await #expect(throws: S3Error.refused(operation: "PUT", key: key, status: 403, code: "SignatureDoesNotMatch")) {
                try await client.put(key, bytes: [1, 2, 3])
            }
        }
        let found = try await Self.withClient { client in try await client.head(key) }
        #expect(found == nil)
    }

    @Test("nothing listening is unreachable, not a hang")
    func unreachable() async throws {
        var configuration = try Self.configuration()
        configuration.endpoint = URL(string: "http://127.0.0.1:1")!
        let http = HTTPClient(eventLoopGroupProvider: .singleton)
        let client = S3Client(configuration: configuration, http: http, timeout: .seconds(5))
        await #expect {
            _ = try await client.head("x")
        } throws: { error in
            if case .unreachable(operation: "HEAD", key: "x", _) = error as? S3Error { true } else { false }
        }
        try await http.shutdown()
    }
}
