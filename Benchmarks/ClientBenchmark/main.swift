// Drives the same SQL as Benchmarks/pgbench/*.sql through the Swift client:
//   client-benchmark <select_user|mark_as_read> <concurrency> <seconds>
// with DATABASE_URL pointing at a database seeded by Benchmarks/seed.sql.
// Prints one line: "<workload> <concurrency> <transactions> <tps>".
import Foundation
import Logging
import PostgresClient

let arguments = CommandLine.arguments
guard arguments.count == 4, let concurrency = Int(arguments[2]), let seconds = Double(arguments[3]),
      let url = ProcessInfo.processInfo.environment["DATABASE_URL"] else {
    FileHandle.standardError.write(Data("usage: DATABASE_URL=… client-benchmark <select_user|mark_as_read> <concurrency> <seconds>\n".utf8))
    exit(2)
}
let workload = arguments[1]
// CLIENT_EXECUTOR=global runs the tasks on Swift's global executor instead of the pool's I/O thread.
let environment = ProcessInfo.processInfo.environment
let onDriver = environment["CLIENT_EXECUTOR"] != "global"

/// pgbench draws its keys from an in-process generator; the system one costs a getrandom call each.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func statement(_ workload: String, using random: inout SplitMix64) -> PostgresQuery {
    switch workload {
    case "select_user":
        let n = Int.random(in: 1...10_000, using: &random)
        return "select id, display_name, time_zone from users where id = md5(\(n)::text)::uuid"
    default:
        let k = Int.random(in: 1...50_000, using: &random)
        let u = ((k - 1) % 1000) * 10 + (k % 10) + 1
        return "select mark_as_read_as(md5(\(u)::text)::uuid, md5('d' || \((k - 1) % 1000 + 1))::uuid, md5('e' || \(k))::uuid)"
    }
}

var logger = Logger(label: "bench")
logger.logLevel = .warning
// CLIENT_PLACEMENT=shared queues the statements on the pool's shared connections
// (PostgresPool.Placement.sharedConnection); by default each runs on a connection of its own.
let placement: PostgresPool.Placement = environment["CLIENT_PLACEMENT"] == "shared" ? .sharedConnection : .ownConnection
// SHARED_CONNECTIONS overrides how many connections carry the shared pipelines (PostgresPool.Options).
let sharedConnections = environment["SHARED_CONNECTIONS"].flatMap(Int.init)
let pool = PostgresPool(configuration: try PostgresConfiguration(url: url), options: .init(size: concurrency, sharedConnections: sharedConnections), logger: logger)
// Open every connection and prepare the statement before the clock starts, as pgbench does.
try await withThrowingTaskGroup(of: Void.self) { group in
    for _ in 0..<concurrency {
        group.addTask { try await pool.withConnection { var random = SplitMix64(state: 1); try await $0.query(statement(workload, using: &random)); try await Task.sleep(for: .milliseconds(50)) } }
    }
    try await group.waitForAll()
}
let deadline = ContinuousClock.now.advanced(by: .milliseconds(Int(seconds * 1000)))
let started = ContinuousClock.now
let total = try await withThrowingTaskGroup(of: Int.self) { group in
    for _ in 0..<concurrency {
        group.addTask(executorPreference: onDriver ? pool.executor : nil) {
            var done = 0
            var random = SplitMix64(state: UInt64.random(in: 0...UInt64.max))
            while ContinuousClock.now < deadline {
                try await pool.query(statement(workload, using: &random), placement: placement)
                done += 1
            }
            return done
        }
    }
    var sum = 0
    for try await done in group { sum += done }
    return sum
}
let elapsed = ContinuousClock.now - started
let elapsedSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
try await pool.close()
print("\(workload) \(concurrency) \(total) \(String(format: "%.0f", Double(total) / elapsedSeconds))")
