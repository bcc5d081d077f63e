import DiaryKit
import Foundation
import Testing

/// Maintenance and the minimum app version, surfaced before a call fails, and typed when one does.
@Suite("Service status")
struct ServiceStatusTests {
    @Test("in maintenance: availability says so, reads work, writes throw maintenance and queued entries wait")
    func maintenance() async throws {
        try await LiveServer.with(environment: ["MAINTENANCE_MODE": "1"]) { server in
            let aiko = try await server.signedIn("aiko")
            #expect(try await aiko.availability() == .maintenance)
            #expect(try await aiko.diaries().isEmpty)
            do {
                _ = try await aiko.createDiary(name: "later", type: .family)
                Issue.record("a write succeeded in maintenance")
            } catch let error as DiaryError {
                guard case .problem(let problem) = error else { throw error }
                #expect(problem.code == .maintenance && problem.status == 503)
            }
            let queue = EntryQueue(client: aiko, store: InMemoryEntryQueueStore())
            try await queue.enqueue(EntryDraft(diaryID: UUID().uuidString.lowercased(), content: "waits"))
            let outcomes = try await queue.send()
            #expect(outcomes.count == 1)
            if case .pending? = outcomes.first {} else { Issue.record("not kept: \(outcomes)") }
        }
    }

    @Test("below the minimum version: availability asks for an update, calls throw upgrade_required (426)")
    func upgradeRequired() async throws {
        try await LiveServer.with(environment: ["MINIMUM_APP_VERSION": "2.1.0"]) { server in
            let old = server.client(appVersion: "2.0.9")
            #expect(try await old.availability() == .upgradeRequired(minimumVersion: "2.1.0"))
            do {
                try await old.signInForDevelopment(name: "aiko")
                Issue.record("an old app signed in")
            } catch let error as DiaryError {
                guard case .problem(let problem) = error else { throw error }
                #expect(problem.code == .upgradeRequired && problem.status == 426)
            }
            let current = server.client(appVersion: "2.1")
            #expect(try await current.availability() == .available)
            try await current.signInForDevelopment(name: "aiko")
            #expect(try await current.me().displayName == "aiko")
        }
    }
}
