import DiaryModels
import Foundation
import Hummingbird
import PostgresClient
import TestSupport

/// A steady stream of real requests (timeline reads and entry posts, alternating) from a
/// few concurrent clients, each outcome recorded with its start and duration, so a fault
/// test can say which requests failed, how, when and how long they took.
struct LoadStream {
    struct Outcome: Sendable {
        var started: ContinuousClock.Instant
        var duration: Duration
        var status: HTTPResponse.Status
        var code: String?
        /// Set for a post: the id it sent, to check afterwards that every 201 was kept.
        var postedEntry: UUID?
    }

    let api: APIHarness
    let token: String
    let diary: UUID

    /// Runs `workers` clients until `fault` returns, then for `tail` longer.
    func run<Result: Sendable>(
        workers: Int = 4, tail: Duration = .milliseconds(300),
        during fault: @Sendable () async throws -> Result
    ) async throws -> (outcomes: [Outcome], faultResult: Result) {
        let stop = LockedValue(false)
        return try await withThrowingTaskGroup(of: [Outcome].self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var outcomes: [Outcome] = []
                    var turn = worker
                    while !stop.value {
                        outcomes.append(try await one(post: turn % 2 == 0))
                        turn += 1
                        try await pace(.milliseconds(2))
                    }
                    return outcomes
                }
            }
            let result = try await fault()
            try await pace(tail)
            stop.value = true
            var outcomes: [Outcome] = []
            for try await part in group { outcomes += part }
            return (outcomes.sorted { $0.started < $1.started }, result)
        }
    }

    func one(post: Bool) async throws -> Outcome {
        let started = ContinuousClock.now
        if post {
            let id = UUID()
            let reply = try await api.post("stream \(id)", in: diary, token: token, id: id)
            return Outcome(started: started, duration: .now - started, status: reply.status, code: reply.code, postedEntry: id)
        }
        let reply = try await api.call(.get, "/v1/diaries/\(diary)/entries?limit=20", token: token)
        return Outcome(started: started, duration: .now - started, status: reply.status, code: reply.code)
    }
}
