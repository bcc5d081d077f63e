import DiaryModels
import Foundation
import Hummingbird
import PostgresClient
import TestSupport

/// A steady stream of real requests from a few concurrent clients, each outcome recorded with
/// its start and duration, so a fault test can say which requests failed, how, when and how
/// long they took. A client alone alternates timeline reads and entry posts; a client with a
/// reader posts, and the reader marks each acknowledged post read (既読). With several
/// servers, each client's requests go round them.
struct LoadStream {
    struct Outcome: Sendable {
        var started: ContinuousClock.Instant
        var duration: Duration
        var status: HTTPResponse.Status
        var code: String?
        /// The Retry-After header, which every 503 carries.
        var retryAfter: String?
        /// Set for a post: the id it sent, to check afterwards that every 201 was kept.
        var postedEntry: UUID?
        /// Set for a read receipt: the entry, to check afterwards that every acknowledged one was kept.
        var readEntry: UUID?
    }

    /// Who writes where: `token` posts in `diary`; `reader`, another member, marks the posts read.
    struct Client: Sendable {
        var token: String
        var diary: UUID
        var reader: String?
    }

    let servers: [APIHarness]
    let clients: [Client]

    init(api: APIHarness, token: String, diary: UUID) {
        self.init(servers: [api], clients: [Client(token: token, diary: diary)])
    }

    init(servers: [APIHarness], clients: [Client]) {
        precondition(!servers.isEmpty && !clients.isEmpty)
        self.servers = servers
        self.clients = clients
    }

    /// Runs `workers` clients (each the next of `clients`) until `fault` returns, then for `tail` longer.
    func run<Result: Sendable>(
        workers: Int = 4, tail: Duration = .milliseconds(300),
        during fault: @Sendable () async throws -> Result
    ) async throws -> (outcomes: [Outcome], faultResult: Result) {
        let stop = LockedValue(false)
        return try await withThrowingTaskGroup(of: [Outcome].self) { group in
            for worker in 0..<workers {
                group.addTask {
                    let client = clients[worker % clients.count]
                    var outcomes: [Outcome] = []
                    var turn = worker
                    while !stop.value {
                        let server = servers[turn % servers.count]
                        if let reader = client.reader {
                            let posted = try await one(post: true, client: client, on: server)
                            outcomes.append(posted)
                            if posted.status == .created, let entry = posted.postedEntry {
                                outcomes.append(try await read(entry, as: reader, client: client, on: servers[(turn + 1) % servers.count]))
                            }
                        } else {
                            outcomes.append(try await one(post: turn % 2 == 0, client: client, on: server))
                        }
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
        try await one(post: post, client: clients[0], on: servers[0])
    }

    private func one(post: Bool, client: Client, on api: APIHarness) async throws -> Outcome {
        let started = ContinuousClock.now
        if post {
            let id = UUID()
            let reply = try await api.post("stream \(id)", in: client.diary, token: client.token, id: id)
            return Outcome(started: started, duration: .now - started, status: reply.status, code: reply.code, retryAfter: reply.headers[.retryAfter], postedEntry: id)
        }
        let reply = try await api.call(.get, "/v1/diaries/\(client.diary)/entries?limit=20", token: client.token)
        return Outcome(started: started, duration: .now - started, status: reply.status, code: reply.code, retryAfter: reply.headers[.retryAfter])
    }

    private func read(_ entry: UUID, as reader: String, client: Client, on api: APIHarness) async throws -> Outcome {
        let started = ContinuousClock.now
        let reply = try await api.call(.post, "/v1/diaries/\(client.diary)/entries/\(entry)/read", token: reader)
        return Outcome(started: started, duration: .now - started, status: reply.status, code: reply.code, retryAfter: reply.headers[.retryAfter], readEntry: entry)
    }
}
