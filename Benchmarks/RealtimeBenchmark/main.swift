// The realtime benchmark's client (Benchmarks/realtime.sh runs it).
//   latency SERVERS USERS_TSV OWNER_URL SOCKETS RATE SECONDS
//     SOCKETS sockets, one per seeded user 1…SOCKETS (ten to a family diary), spread over the
//     servers; entries inserted at RATE a second for SECONDS, each timed from the return
//     of its COMMIT to its entry.created frame at every member's socket. Then as fast as 4
//     connections can insert, for SECONDS: events delivered a second.
//   idle SERVER USERS_TSV SOCKETS PID
//     SOCKETS idle sockets (ten per user) on one server; its RSS before and after.
import Foundation
import HummingbirdWSClient
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresClient

let arguments = CommandLine.arguments
let logger = Logger(label: "realtime-benchmark")
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(1)
}

struct User { var n: Int; var token: String; var diary: String }

func readUsers(_ path: String) -> [User] {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { fail("cannot read \(path)") }
    return text.split(separator: "\n").map { line in
        let fields = line.split(separator: "\t").map(String.init)
        return User(n: Int(fields[0])!, token: fields[1], diary: fields[2])
    }
}


/// Opens a socket, counts `ready`, and hands every text frame to `onFrame` until `stop`.
final class Sockets: Sendable {
    let ready = NIOLockedValueBox(0)
    let failed = NIOLockedValueBox(0)
    let tasks = NIOLockedValueBox<[Task<Void, Never>]>([])

    func open(url: String, token: String, onFrame: @escaping @Sendable (String, ContinuousClock.Instant) -> Void) {
        let ready = self.ready, failed = self.failed
        let task = Task {
            do {
                try await WebSocketClient.connect(
                    url: url, configuration: .init(maxFrameSize: 1 << 20, additionalHeaders: [.authorization: "Bearer \(token)"]), logger: logger
                ) { inbound, _, _ in
                    var first = true
                    for try await message in inbound.messages(maxSize: 1 << 22) {
                        guard case .text(let text) = message else { continue }
                        if first { first = false; ready.withLockedValue { $0 += 1 }; continue }
                        onFrame(text, .now)
                    }
                }
            } catch {
                failed.withLockedValue { $0 += 1 }
            }
        }
        tasks.withLockedValue { $0.append(task) }
    }

    func waitReady(_ count: Int, within limit: Duration) async {
        let deadline = ContinuousClock.now + limit
        while ready.withLockedValue({ $0 }) + failed.withLockedValue({ $0 }) < count, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    func closeAll() { tasks.withLockedValue { $0.forEach { $0.cancel() } } }
}

func percentile(_ sorted: [Double], _ p: Double) -> Double {
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))]
}

func rss(_ pid: String) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
}

switch arguments.dropFirst().first {
case "latency":
    guard arguments.count == 8 else { fail("usage: latency SERVERS USERS_TSV OWNER_URL SOCKETS RATE SECONDS") }
    let servers = arguments[2].split(separator: ",").map(String.init)
    let users = Array(readUsers(arguments[3]).prefix(Int(arguments[5])!))
    let rate = Double(arguments[6])!, seconds = Double(arguments[7])!
    let pool = PostgresPool(configuration: try PostgresConfiguration(url: arguments[4]), options: .init(size: 4), logger: logger)
    let committed = NIOLockedValueBox<[Int: ContinuousClock.Instant]>([:])
    let arrivals = NIOLockedValueBox<[(Int, ContinuousClock.Instant)]>([])
    let sockets = Sockets()
    for (index, user) in users.enumerated() {
        sockets.open(url: "ws://127.0.0.1:\(servers[index % servers.count])/v1/realtime", token: user.token) { text, at in
            // "bench:<n>;" in the content names the insert.
            guard text.contains(#""type":"entry.created""#), let range = text.range(of: "bench:") else { return }
            let digits = text[range.upperBound...].prefix { $0.isNumber }
            if let n = Int(digits) { arrivals.withLockedValue { $0.append((n, at)) } }
        }
        if index % 100 == 99 { try? await Task.sleep(for: .milliseconds(20)) }
    }
    await sockets.waitReady(users.count, within: .seconds(60))
    print("sockets ready: \(sockets.ready.withLockedValue { $0 }) of \(users.count) (failed \(sockets.failed.withLockedValue { $0 }))")
    let authors = users.filter { $0.n % 10 == 1 }

    func insert(_ n: Int) async throws {
        let author = authors[n % authors.count]
        // Announced after the COMMIT, as the server announces its own posts.
        _ = try await pool.transaction([
            """
            select post_entry_as(md5(\(String(author.n)))::uuid, \(author.diary)::uuid, gen_random_uuid(), \("bench:\(n); 今日も一日お疲れさま"))
            """,
        ], afterCommit: ["select announce_pending()"])
        committed.withLockedValue { $0[n] = .now }
    }

    // Paced: the latency from COMMIT to frame.
    let start = ContinuousClock.now
    let total = Int(rate * seconds)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for n in 0..<total {
            let due = start + .seconds(Double(n) / rate)
            if due > .now { try await Task.sleep(until: due) }
            group.addTask { try await insert(n) }
        }
        try await group.waitForAll()
    }
    try await Task.sleep(for: .seconds(3))
    let times = committed.withLockedValue { $0 }
    let latencies = arrivals.withLockedValue { $0 }.compactMap { n, at -> Double? in
        guard n < total, let commit = times[n] else { return nil }
        return Double((at - commit).components.attoseconds) / 1e15 + Double((at - commit).components.seconds) * 1000
    }.sorted()
    let expected = total * 10
    print(String(format: "paced: %d entries at %.0f/s, %d of %d frames: p50 %.1f ms, p99 %.1f ms, max %.1f ms (COMMIT returned → frame read)",
                 total, rate, latencies.count, expected, percentile(latencies, 0.5), percentile(latencies, 0.99), latencies.last ?? .nan))

    // Saturation: as fast as 4 connections insert.
    let before = arrivals.withLockedValue { $0.count }
    let saturationStart = ContinuousClock.now
    let posted = NIOLockedValueBox(0)
    try await withThrowingTaskGroup(of: Void.self) { group in
        for worker in 0..<4 {
            group.addTask {
                var n = 1_000_000 * (worker + 1)
                while ContinuousClock.now - saturationStart < .seconds(seconds) {
                    try await insert(n)
                    n += 1
                    posted.withLockedValue { $0 += 1 }
                }
            }
        }
        try await group.waitForAll()
    }
    let postingEnded = ContinuousClock.now
    // Drain: until no frame arrives for 2 s.
    var last = arrivals.withLockedValue { $0.count }
    while true {
        try await Task.sleep(for: .seconds(2))
        let now = arrivals.withLockedValue { $0.count }
        if now == last { break }
        last = now
    }
    let delivered = last - before
    let drained = arrivals.withLockedValue { $0.last?.1 } ?? postingEnded
    let elapsed = Double((drained - saturationStart).components.seconds) + Double((drained - saturationStart).components.attoseconds) / 1e18
    print(String(format: "saturation: %d entries in %.0f s (%.0f/s); %d of %d frames delivered in %.1f s: %.0f events/s",
                 posted.withLockedValue { $0 }, seconds, Double(posted.withLockedValue { $0 }) / seconds, delivered, posted.withLockedValue { $0 } * 10, elapsed, Double(delivered) / elapsed))
    sockets.closeAll()
    try await pool.close()

case "idle":
    guard arguments.count == 6 else { fail("usage: idle SERVER USERS_TSV SOCKETS PID") }
    let server = arguments[2]
    let count = Int(arguments[4])!
    let users = readUsers(arguments[3])
    let pid = arguments[5]
    let sockets = Sockets()
    // Warm: one socket per first 10 users, so one-off allocations are not counted per socket.
    for user in users.prefix(10) { sockets.open(url: "ws://127.0.0.1:\(server)/v1/realtime", token: user.token) { _, _ in } }
    await sockets.waitReady(10, within: .seconds(30))
    try await Task.sleep(for: .seconds(2))
    let before = rss(pid)
    for index in 0..<count {
        let user = users[(index / 10 + 10) % users.count]
        sockets.open(url: "ws://127.0.0.1:\(server)/v1/realtime", token: user.token) { _, _ in }
        if index % 200 == 199 {
            await sockets.waitReady(10 + index + 1, within: .seconds(60))
        }
    }
    await sockets.waitReady(10 + count, within: .seconds(120))
    try await Task.sleep(for: .seconds(5))
    let after = rss(pid)
    let opened = sockets.ready.withLockedValue { $0 } - 10
    print(String(format: "idle: %d sockets open (failed %d); server RSS %d KB → %d KB: %.1f KB per socket",
                 opened, sockets.failed.withLockedValue { $0 }, before, after, Double(after - before) / Double(max(opened, 1))))
    sockets.closeAll()

default:
    fail("usage: realtime-benchmark latency|idle …")
}
