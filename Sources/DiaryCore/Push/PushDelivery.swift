package import APNSClient
package import AsyncHTTPClient
import Foundation
package import Logging
import Metrics
package import PostgresClient

/// One per server: sends the push outbox to APNs.
///
/// Rows are claimed in batches (`claim_push_batch`: FOR UPDATE SKIP LOCKED, then leased),
/// sent at once over one HTTP/2 connection, and settled in one round trip
/// (`finish_push_batch`). Any number of servers share the outbox; none holds a transaction
/// open while a request is in flight. LISTEN push_outbox wakes it within a round trip of
/// the commit; a poll picks up rows whose backoff has ended, and notifications lost while
/// the listener reconnects.
///
/// Without an APNs configuration it sends nothing: rows wait, and the gauges still report them.
package final class PushDelivery: Sendable {
    package struct Options: Sendable {
        package var batchSize = 100
        /// A claimed row is due again after this, should its server die mid-request. Longer
        /// than a request may take.
        package var lease: Duration = .seconds(30)
        package var pollInterval: Duration = .seconds(1)
        /// Retries wait 1 s × 2^(attempt−1) up to 10 minutes, a random half to all of it, or
        /// longer if Apple says so (Retry-After).
        package var backoff = Backoff(base: .seconds(1), cap: .seconds(600), jitter: 0.5...1.0)
        /// Rows held back by a configuration error (a refused provider token) are tried again after this.
        package var configurationHold: Duration = .seconds(60)
        package var gaugeInterval: Duration = .seconds(5)
        /// `apns-expiration`: how long Apple keeps trying a device that is offline.
        package var expiration: Duration = .seconds(24 * 3600)
        package init() {}
    }

    package static let applicationName = "diary-server push"
    /// The delivery's own connections; run it as a service beside the delivery.
    package let pool: PostgresPool
    private let listenConfiguration: PostgresConfiguration
    private let apns: APNSConfiguration?
    /// The process's shared client; nil gives APNs a client of its own.
    private let http: HTTPClient?
    private let options: Options
    private let logger: Logger
    private let wakeups = Wakeups()

    package init(
        pool: PostgresPool, listenConfiguration: PostgresConfiguration, apns: APNSConfiguration?, http: HTTPClient? = nil, options: Options = Options(), logger: Logger
    ) {
        self.pool = pool
        self.listenConfiguration = listenConfiguration
        self.apns = apns
        self.http = http
        self.options = options
        self.logger = logger
    }

    /// Runs until cancelled.
    package func run() async {
        var loops: [@Sendable () async -> Void] = [{ await repeating(every: self.options.gaugeInterval, startingAtOnce: true) { await self.recordGauges() } }]
        if let apns {
            loops.append { await self.deliver(apns) }
            loops += wakeups.wakers(channel: Announcement.pushOutbox.channel, listen: listenConfiguration, polling: options.pollInterval, logger: logger)
        }
        await runWorkerLoops(loops, finishing: wakeups)
    }

    private func deliver(_ configuration: APNSConfiguration) async {
        let client: APNSClient
        do {
            client = try http.map { try APNSClient(configuration: configuration, http: $0, logger: logger) }
                ?? APNSClient(configuration: configuration, logger: logger)
        } catch {
            logger.error("push: the APNs key cannot be used; notifications stay pending", metadata: ["error": "\(error)"])
            return
        }
        await wakeups.drainEachRound(
            batchSize: options.batchSize, failure: "push: the outbox cannot be read or settled", logger: logger,
            claim: claim, actAndSettle: { try await self.settle(await self.send($0, with: client)) })
        try? await client.shutdown()
    }

    struct Claimed: Sendable {
        var id: Int64
        var deviceToken: String
        var environment: APNSEnvironment
        var payload: String
        var createdAt: Date
        var attempts: Int
    }

    private func claim() async throws -> [Claimed] {
        let rows = try await pool.query("""
            select id, device_token, environment, payload::text as payload, created_at, attempts
            from claim_push_batch(\(options.batchSize)::integer, \(options.lease))
            """)
        return try rows.map { row in
            Claimed(
                id: try row.decode("id"), deviceToken: try row.decode("device_token"),
                environment: APNSEnvironment(rawValue: try row.decode("environment")) ?? .production,
                payload: try row.decode("payload"), createdAt: try row.decode("created_at"), attempts: try row.decode("attempts"))
        }
    }

    private func send(_ batch: [Claimed], with client: APNSClient) async -> [(Claimed, PushOutcome)] {
        let expiration = Date().addingTimeInterval(options.expiration.totalSeconds)
        return await withTaskGroup(of: (Claimed, PushOutcome).self) { group in
            for row in batch {
                group.addTask {
                    let result = await client.send(APNSNotification(
                        deviceToken: row.deviceToken, environment: row.environment, payload: Array(row.payload.utf8), expiration: expiration))
                    return (row, PushOutcome(result, attempts: row.attempts, options: self.options))
                }
            }
            var outcomes: [(Claimed, PushOutcome)] = []
            outcomes.reserveCapacity(batch.count)
            for await outcome in group { outcomes.append(outcome) }
            return outcomes
        }
    }

    private func settle(_ outcomes: [(Claimed, PushOutcome)]) async throws {
        let now = Date()
        for (row, outcome) in outcomes {
            Counter(label: "push_sent_total", dimensions: [("result", outcome.name)]).increment()
            switch outcome {
            case .sent:
                Timer(label: "push_latency_seconds", dimensions: []).recordSeconds(max(0, now.timeIntervalSince(row.createdAt)))
            case .hold(let reason):
                logger.error("push: APNs refuses our configuration; notifications stay pending", metadata: ["reason": "\(reason)"])
            case .dead(let reason):
                logger.warning("push: APNs refused a notification for good", metadata: ["reason": "\(reason)", "outbox_id": "\(row.id)"])
            case .unregistered(let reason):
                logger.info("push: device removed", metadata: ["reason": "\(reason)", "device": "\(row.deviceToken.prefix(8))…"])
            case .retry(_, let reason):
                logger.notice("push: will retry", metadata: ["reason": "\(reason)", "attempt": "\(row.attempts)", "outbox_id": "\(row.id)"])
            }
        }
        let finish: PostgresQuery = """
            select finish_push_batch(
                \(outcomes.map { String($0.0.id) })::bigint[], \(outcomes.map(\.1.name))::text[],
                \(outcomes.map { String(Int($0.1.delay(options: options) / .milliseconds(1))) })::integer[], \(outcomes.map(\.1.error))::text[])
            """
        // The requests are out: a batch left unsettled is sent again when its lease ends, so a
        // busy pool or a dropped connection gets a few more tries first. Settling twice is
        // harmless: sent rows are gone, the rest are set again to the same outcome.
        for attempt in 1... {
            do {
                _ = try await pool.query(finish)
                return
            } catch where attempt < 3 && !Task.isCancelled {
                logger.notice("push: settling a batch failed; trying again", metadata: ["error": "\(error)", "attempt": "\(attempt)"])
                try await Task.sleep(for: Self.settleRetry.delay(attempt: attempt))
            }
        }
    }

    /// Settling again: 250 ms, then 500 ms.
    static let settleRetry = Backoff(base: .milliseconds(250), cap: .milliseconds(500))

    private func recordGauges() async {
        do {
            let rows = try await pool.query("select pending, dead from push_outbox_counts()")
            guard let row = rows.first else { return }
            Gauge(label: "push_outbox_pending", dimensions: []).record(try row.decode("pending", as: Int.self))
            Gauge(label: "push_outbox_dead", dimensions: []).record(try row.decode("dead", as: Int.self))
        } catch {
            logger.warning("push: counting the outbox failed", metadata: ["error": "\(error)"])
        }
    }
}
