// The push benchmark's client (Benchmarks/push.sh runs it), against the APNs stand-in of
// Tests/APNSTestServer answering at once.
//   e2e WORK_DIR OWNER_URL RATE SECONDS BURST TRANSACTIONS SERVER_COMMAND...
//     Starts a stand-in, writes its provider key to WORK_DIR/apns.p8, and runs SERVER_COMMAND
//     (`diary-server serve`, with DATABASE_URL, PORT… from this process's environment) pointed
//     at it, logging to WORK_DIR/push-server.log. Seeded diary 1 (users 1…10, family) gets one
//     device per member, so an entry notifies the 9 members other than its author.
//     1. latency: RATE entries a second for SECONDS, each INSERT its own transaction through
//        OWNER_URL; every notification timed from the return of its entry's COMMIT to the
//        stand-in's receipt of the request (matched by the payload's entryId).
//     2. throughput: BURST entries in TRANSACTIONS multi-row transactions, one after another;
//        notifications a second from the first COMMIT's return to the last request received,
//        and each (device, entry) checked to arrive exactly once.
//   standin WORK_DIR
//     A stand-in kept up until killed: WORK_DIR/apns.env holds `export APNS_…=…` lines that
//     point `diary-server serve` at it; WORK_DIR/standin.count is rewritten every 200 ms
//     with "<requests accepted> <violations>".
import APNSTestServer
import Crypto
import Foundation
import Logging
import NIOConcurrencyHelpers
import PostgresClient

let arguments = CommandLine.arguments
let logger = Logger(label: "push-benchmark")
let teamID = "TEAM123456", keyID = "KEY1234567", topic = "app.zutto-nikki.bench"
/// Seeded diary 1's members are users 1…10 (Benchmarks/endpoints/seed.sql).
let members = 10
let notifiedPerEntry = members - 1

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(1)
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

/// A stand-in answering at once, its key written to `directory`/apns.p8, and `serve`'s settings for it.
func startStandIn(in directory: String) async throws -> (APNSStandIn, [String: String]) {
    let key = P256.Signing.PrivateKey()
    let standIn = try await APNSStandIn.start(teamID: teamID, keyID: keyID, publicKey: key.publicKey, topic: topic)
    let keyFile = directory + "/apns.p8"
    try Data(key.pemRepresentation.utf8).write(to: URL(fileURLWithPath: keyFile))
    let environment = [
        "APNS_KEY_FILE": keyFile, "APNS_KEY_ID": keyID, "APNS_TEAM_ID": teamID, "APNS_TOPIC": topic,
        "APNS_ENDPOINT": standIn.endpoint, "APNS_CA_FILE": standIn.caFile,
    ]
    return (standIn, environment)
}

func run(_ command: [String], environment: [String: String] = ProcessInfo.processInfo.environment) -> Int32 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: command[0])
    process.arguments = Array(command.dropFirst())
    process.environment = environment
    process.standardOutput = FileHandle.nullDevice
    process.standardError = FileHandle.nullDevice
    do { try process.run() } catch { return -1 }
    process.waitUntilExit()
    return process.terminationStatus
}

/// The entry a request notifies of, from its payload.
func entryID(_ request: APNSStandIn.Request) -> String? { request.payload["entryId"] as? String }

switch arguments.dropFirst().first {
case "e2e":
    guard arguments.count >= 9 else { fail("usage: e2e WORK_DIR OWNER_URL RATE SECONDS BURST TRANSACTIONS SERVER_COMMAND...") }
    let directory = arguments[2]
    let rate = Double(arguments[4])!, seconds = Double(arguments[5])!
    let burst = Int(arguments[6])!, transactions = max(1, Int(arguments[7])!)
    let serverCommand = Array(arguments[8...])
    let (standIn, apnsEnvironment) = try await startStandIn(in: directory)
    let pool = PostgresPool(configuration: try PostgresConfiguration(url: arguments[3]), options: .init(size: 4), logger: logger)

    // One device per member of diary 1, none elsewhere.
    _ = try await pool.transaction([
        "delete from devices",
        """
        insert into devices (token, user_id, environment)
        select md5('device ' || n) || md5('device 2 ' || n), md5(n::text)::uuid, 'production' from generate_series(1, 10) n
        """,
    ])

    // The server.
    let environment = ProcessInfo.processInfo.environment.merging(apnsEnvironment) { $1 }
    guard let port = environment["PORT"] else { fail("e2e: PORT is not set") }
    let server = Process()
    server.executableURL = URL(fileURLWithPath: serverCommand[0])
    server.arguments = Array(serverCommand.dropFirst())
    server.environment = environment
    let logFile = directory + "/push-server.log"
    _ = FileManager.default.createFile(atPath: logFile, contents: nil)
    server.standardError = FileHandle(forWritingAtPath: logFile)
    server.standardOutput = FileHandle.nullDevice
    try server.run()
    defer { if server.isRunning { server.terminate(); server.waitUntilExit() } }
    var healthy = false
    for _ in 0..<100 {
        if run(["/usr/bin/curl", "-fs", "http://127.0.0.1:\(port)/health"]) == 0 { healthy = true; break }
        try await Task.sleep(for: .milliseconds(100))
    }
    guard healthy else { fail("e2e: the server did not answer /health; see \(logFile)") }

    let committed = NIOLockedValueBox<[String: Date]>([:])
    func insert(_ n: Int) async throws {
        let author = n % members + 1
        // Announced after the COMMIT, as the server announces its own posts.
        let rows = try await pool.transaction([
            """
            select posted.id::text as id from (select gen_random_uuid() as id) posted
            where post_entry_as(md5(\(String(author)))::uuid, md5('d1')::uuid, posted.id, \("push bench \(n): 今日も一日お疲れさま"))
            """,
        ], afterCommit: ["select announce_pending()"])[0]
        let at = Date()
        let id: String = try rows.first!.decode("id")
        committed.withLockedValue { $0[id] = at }
    }
    /// Waits until `count` requests were accepted, or none came for `quiet`.
    func settle(count: Int, quiet: Duration) async throws -> Int {
        var last = standIn.requests.count, lastChange = ContinuousClock.now
        while last < count {
            try await Task.sleep(for: .milliseconds(50))
            let now = standIn.requests.count
            if now != last { last = now; lastChange = .now } else if ContinuousClock.now - lastChange > quiet { break }
        }
        return last
    }

    // Warm-up: the server's LISTEN, its HTTP/2 connection and first provider token.
    try await insert(999_999)
    let warm = try await settle(count: notifiedPerEntry, quiet: .seconds(15))
    guard warm >= notifiedPerEntry else {
        fail("e2e: warm-up: \(warm) of \(notifiedPerEntry) notifications reached the stand-in; violations: \(standIn.violations.prefix(3)); see \(logFile)")
    }

    // 1. Paced: from each COMMIT to the stand-in.
    let startCount = standIn.requests.count
    let total = Int(rate * seconds)
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        for n in 0..<total {
            let due = start + .seconds(Double(n) / rate)
            if due > .now { try await Task.sleep(until: due) }
            group.addTask { try await insert(n) }
        }
        try await group.waitForAll()
    }
    _ = try await settle(count: startCount + total * notifiedPerEntry, quiet: .seconds(10))
    let paced = Array(standIn.requests[startCount...])
    let times = committed.withLockedValue { $0 }
    var seen = Set<String>(), duplicates = 0
    var latencies: [Double] = []
    for request in paced {
        guard let id = entryID(request), let commit = times[id] else { continue }
        if !seen.insert("\(request.deviceToken) \(id)").inserted { duplicates += 1; continue }
        latencies.append(request.receivedAt.timeIntervalSince(commit) * 1000)
    }
    latencies.sort()
    let within1s = latencies.filter { $0 <= 1000 }.count
    print(String(
        format: "latency: %d entries at %.0f/s for %.0f s, %d notified devices each: %d of %d notifications, %d duplicates; "
            + "COMMIT returned → request at the stand-in: p50 %.1f ms, p99 %.1f ms, max %.1f ms; %.2f%% within 1 s",
        total, rate, seconds, notifiedPerEntry, latencies.count, total * notifiedPerEntry, duplicates,
        percentile(latencies, 0.5), percentile(latencies, 0.99), latencies.last ?? .nan,
        100 * Double(within1s) / Double(max(total * notifiedPerEntry, 1))))

    // 2. A burst: notifications a second.
    let burstStart = standIn.requests.count
    committed.withLockedValue { $0.removeAll() }
    var firstCommit: Date?
    var inserted: [String] = []
    let perTransaction = (burst + transactions - 1) / transactions
    let insertStart = Date()
    for chunk in 0..<transactions {
        let low = chunk * perTransaction, high = min(burst, low + perTransaction) - 1
        guard low <= high else { break }
        let rows = try await pool.transaction([
            """
            select posted.id::text as id from (select gen_random_uuid() as id, g from generate_series(\(low)::int, \(high)::int) g) posted
            where post_entry_as(md5((posted.g % 10 + 1)::text)::uuid, md5('d1')::uuid, posted.id, 'push burst ' || posted.g || ': 今日も一日お疲れさま')
            """,
        ], afterCommit: ["select announce_pending()"])[0]
        if firstCommit == nil { firstCommit = Date() }
        for row in rows { inserted.append(try row.decode("id")) }
    }
    let insertEnd = Date()
    let expected = inserted.count * notifiedPerEntry
    _ = try await settle(count: burstStart + expected, quiet: .seconds(10))
    try await Task.sleep(for: .seconds(1))  // anything sent twice
    let burstRequests = Array(standIn.requests[burstStart...])
    let wanted = Set(inserted)
    var keys = Set<String>(), burstDuplicates = 0, strays = 0
    var lastReceived = firstCommit!
    for request in burstRequests {
        guard let id = entryID(request), wanted.contains(id) else { strays += 1; continue }
        if !keys.insert("\(request.deviceToken) \(id)").inserted { burstDuplicates += 1 }
        lastReceived = max(lastReceived, request.receivedAt)
    }
    let elapsed = lastReceived.timeIntervalSince(firstCommit!)
    let outbox = try await pool.query("select count(*) filter (where dead_at is null) as pending, count(*) filter (where dead_at is not null) as dead from push_outbox").first!
    let pending: Int = try outbox.decode("pending"), dead: Int = try outbox.decode("dead")
    print(String(
        format: "throughput: %d entries in %d multi-row transactions (%.2f s to insert) → %d notifications: %d arrived, %d missing, "
            + "%d duplicates, %d strays; first COMMIT → last request %.2f s: %.0f notifications/s (%.0f/s from the first INSERT); "
            + "outbox after: %d pending, %d dead",
        inserted.count, transactions, insertEnd.timeIntervalSince(insertStart), expected, keys.count, expected - keys.count,
        burstDuplicates, strays, elapsed, Double(keys.count) / elapsed,
        Double(keys.count) / lastReceived.timeIntervalSince(insertStart), pending, dead))
    let violations = standIn.violations
    print("stand-in: \(standIn.requests.count) requests accepted, \(violations.count) violations, \(standIn.connectionsAccepted) connection(s)"
        + (violations.isEmpty ? "" : "; first: \(violations[0])"))

    server.terminate()
    server.waitUntilExit()
    _ = try await pool.transaction(["delete from devices"])
    try await pool.close()
    try await standIn.shutdown()

case "standin":
    guard arguments.count == 3 else { fail("usage: standin WORK_DIR") }
    let directory = arguments[2]
    let (standIn, environment) = try await startStandIn(in: directory)
    let lines = environment.keys.sorted().map { "export \($0)='\(environment[$0]!)'" }.joined(separator: "\n") + "\n"
    try Data(lines.utf8).write(to: URL(fileURLWithPath: directory + "/apns.env"), options: .atomic)
    let countFile = URL(fileURLWithPath: directory + "/standin.count")
    while true {
        let line = "\(standIn.requests.count) \(standIn.violations.count)\n"
        try Data(line.utf8).write(to: countFile, options: .atomic)
        try await Task.sleep(for: .milliseconds(200))
    }

default:
    fail("usage: push-benchmark e2e|standin …")
}
