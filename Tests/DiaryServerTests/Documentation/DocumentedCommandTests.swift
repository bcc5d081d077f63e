import AsyncHTTPClient
import DiaryModels
import Foundation
import PostgresClient
import Testing
import TestSupport

/// The README and docs/ say what to type: every `sh` block among them is run here, against a
/// server and databases of this checkout, or is run as written by the files its marker names,
/// or says why it is not run (DocumentedCommand).
@Suite("The README's and docs/' commands", .timeLimit(.minutes(3)))
struct DocumentedCommandTests {
    @Test("every sh block is marked, a block run elsewhere is named in the files its marker gives, and a block not run says why")
    func everyBlockIsTaken() throws {
        let blocks = try DocumentedCommand.all()
        #expect(blocks.count >= 10, "\(blocks)")
        #expect(blocks.filter { $0.kind == .tour }.count == 1)
        #expect(DocumentedCommand.holds("then serve it", "serve") && !DocumentedCommand.holds("the server", "serve"))
        #expect(!DocumentedCommand.holds("--target-action=promote", "--target") && DocumentedCommand.holds("--target-action --target=x", "--target"))
        for block in blocks {
            guard case .elsewhere(let files) = block.kind else { continue }
            let texts = try files.map { try String(contentsOf: ScratchCluster.packageRoot.appendingPathComponent($0), encoding: .utf8) }
            #expect(!block.commandWords.isEmpty, "\(block)")
            for word in block.commandWords {
                #expect(texts.contains { DocumentedCommand.holds($0, word) }, "\(block): \(files) run no \(word)")
            }
        }
    }

    @Test("the README's tour, then every block that follows it, against a server of this checkout, its photos copied to S3")
    func theTourAndWhatFollows() async throws {
        try await MigratedTemplate.withDatabase { database in
            let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("diary-docs-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: scratch) }
            let data = scratch.appendingPathComponent("data"), work = scratch.appendingPathComponent("work")
            for directory in [data, work] { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
            let server = try ServerProcess(database: database.as(TestDatabase.appRole), dataDirectory: data)
            defer { server.kill() }
            try await server.waitUntilHealthy(HTTPClient.shared)
            let api = "http://127.0.0.1:\(server.port)"

            let tour = try DocumentedCommand.tour()
            let toured = try await DocumentedCommand.run(
                [tour.text, #"printf '\nAIKO=%s DIARY=%s\n' "$aiko" "$id""#], api: api, in: FileManager.default.temporaryDirectory)
            #expect(toured.status == 0, "\(tour): \(toured.output)")
            #expect(toured.output.contains(#""content":"今日は晴れ""#) && toured.output.contains(#""content":"こちらは雨""#), "\(toured.output)")
            #expect(toured.output.contains(#""readBy":[{"#), "\(toured.output)")
            let left = try #require(toured.output.split(separator: "\n").last { $0.hasPrefix("AIKO=") })

            let bucket = try TestBucket.configuration()
            try Data(TestImages.jpeg(width: 32, height: 16)).write(to: work.appendingPathComponent("picture.jpg"))
            let secret = work.appendingPathComponent("s3-secret")
            try bucket.credentials.secretAccessKey.write(to: secret, atomically: true, encoding: .utf8)
            let values = [
                "S3_ENDPOINT": bucket.endpoint.absoluteString, "S3_REGION": bucket.region, "S3_BUCKET": bucket.bucket,
                "S3_ACCESS_KEY_ID": bucket.credentials.accessKeyID, "S3_SECRET_ACCESS_KEY_FILE": secret.path,
            ]
            // What the reader's deployment sets besides: the binary, its data folder, the
            // owner's database, and how moto is addressed.
            let environment = [
                "PATH": ServerProcess.binary.deletingLastPathComponent().path + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? ""),
                "DIARY_DATA_DIR": data.path,
                "MIGRATION_DATABASE_URL": try ServerProcess.url(of: database.as(TestDatabase.ownerRole)),
                "S3_PATH_STYLE": "1", "S3_PREFIX": "docs-\(UUID().uuidString.lowercased())-",
            ]
            let following = try DocumentedCommand.all().filter { $0.kind == .afterTour }
            #expect(following.count >= 3, "\(following)")
            for block in following {
                let result = try await DocumentedCommand.run(
                    [String(left), block.text], api: api, in: work, values: values, environment: environment)
                #expect(result.status == 0, "\(block): \(result.output)")
            }
        }
    }

    @Test("the migrations by psql, as written, build a schema the server serves")
    func migrationsByPSQL() async throws {
        let blocks = try DocumentedCommand.all().filter { $0.kind == .migrations }
        #expect(blocks.count == 1)
        for block in blocks {
            try await TestDatabase.with { database in
                // As in production: the owner owns the database, and so its public schema.
                try await TestDatabase.withAdminPool { try await $0.query(PostgresQuery(unsafeSQL: "alter database \(database.database!) owner to \(TestDatabase.ownerRole)")) }
                let result = try await DocumentedCommand.run(
                    [block.text], api: "", in: ScratchCluster.packageRoot,
                    environment: [
                        "SUPERUSER_URL": try ServerProcess.url(of: database),
                        "MIGRATION_DATABASE_URL": try ServerProcess.url(of: database.as(TestDatabase.ownerRole)),
                    ])
                #expect(result.status == 0, "\(block): \(result.output)")
                let server = try ServerProcess(database: database.as(TestDatabase.appRole))
                defer { server.kill() }
                try await server.waitUntilHealthy(HTTPClient.shared)
                let session = try await server.request(HTTPClient.shared, .POST, "/v1/auth/dev", json: #"{"name":"psql"}"#).decode(Session.self)
                _ = try await server.request(HTTPClient.shared, .POST, "/v1/diaries", token: session.accessToken, json: #"{"name":"psql","type":"couple"}"#, expecting: 201)
            }
        }
    }
}
