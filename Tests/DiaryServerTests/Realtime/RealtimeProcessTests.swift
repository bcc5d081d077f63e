import AsyncHTTPClient
import DiaryModels
import Foundation
import NIOWebSocket
import PostgresClient
import Testing
import TestSupport

/// Realtime across `diary-server serve` processes: each delivers every change to its own
/// sockets, wherever the change was made; SIGTERM closes sockets with 1001.
@Suite("Realtime across processes", .timeLimit(.minutes(3)))
struct RealtimeProcessTests {
    @Test("an entry posted through one server reaches a socket on another; SIGTERM closes it with 1001")
    func twoServers() async throws {
        try await MigratedTemplate.withDatabase { database in
            let shared = FileManager.default.temporaryDirectory.appendingPathComponent("diary-shared-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true)
            let first = try ServerProcess(database: database.as(TestDatabase.appRole), dataDirectory: shared)
            defer { first.kill() }
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            do {
                try await first.waitUntilHealthy(http)
                // The second starts once the first has made the token key they share.
                let second = try ServerProcess(database: database.as(TestDatabase.appRole), dataDirectory: shared)
                defer { second.kill() }
                try await second.waitUntilHealthy(http)
                let alice = try await first.request(http, .POST, "/v1/auth/dev", json: #"{"name":"alice"}"#).decode(Session.self)
                let bob = try await second.request(http, .POST, "/v1/auth/dev", json: #"{"name":"bob"}"#).decode(Session.self)
                let diary = try await first.request(http, .POST, "/v1/diaries", token: alice.accessToken, json: #"{"name":"二人","type":"couple"}"#, expecting: 201).decode(Diary.self)
                _ = try await second.request(http, .POST, "/v1/diaries/join", token: bob.accessToken, json: #"{"inviteCode":"\#(diary.inviteCode)"}"#)

                let socket = TestSocket(port: second.port, token: bob.accessToken)
                defer { socket.close() }
                #expect(try await socket.nextType() == "ready")
                let posted = try await first.request(
                    http, .POST, "/v1/diaries/\(diary.id)/entries", token: alice.accessToken, json: #"{"content":"別のサーバーから"}"#, expecting: 201
                ).decode(Entry.self)
                // A change reaches sockets once no older transaction in the cluster is still open;
                // a parallel test's pg_dump under load has held that back for over 10 s.
                let event = try await socket.event(.entryCreated, within: .seconds(30))
                #expect(event.data == .entry(Entry(
                    id: posted.id, diaryId: diary.id, author: posted.author, content: posted.content, question: nil, images: [],
                    createdAt: posted.createdAt, updatedAt: posted.updatedAt, readBy: [], isMine: false
                )))

                second.terminate()
                #expect(try await socket.closeCode() == .goingAway)
                #expect(try await second.waitForExit(within: .seconds(10)).status == 0)
            } catch {
                try? await http.shutdown()
                throw error
            }
            try await http.shutdown()
        }
    }
}
