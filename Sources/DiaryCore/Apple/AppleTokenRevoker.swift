package import AppleIDClient
import Foundation
package import Logging
import Metrics
import NIOConcurrencyHelpers
package import PostgresClient

/// One per server: revokes at Apple the tokens of deleted accounts.
///
/// The deletion queues the revocation in its own transaction (`apple_revocations`), so it
/// never waits for Apple. Rows are leased in batches (`claim_apple_revocations`, FOR
/// UPDATE SKIP LOCKED), revoked outside any transaction, and settled one by one
/// (`finish_apple_revocation`). `wake()` and LISTEN apple_revocations start a round at
/// once; a poll picks up rows whose backoff has ended. A row still failing 7 days after it
/// was queued is recorded as failed.
package final class AppleTokenRevoker: Sendable {
    package struct Options: Sendable {
        /// Revoked one after another: a batch takes at most batchSize × 5 s (the request
        /// timeout), well inside the lease.
        package var batchSize = 5
        /// A claimed row is due again after this, should its server die mid-request.
        package var lease: Duration = .seconds(120)
        package var pollInterval: Duration = .seconds(30)
        /// Retries wait 30 s × 2^(attempt−1) up to 6 hours, and up to a fifth more, so that a
        /// queue that failed together does not retry together.
        package var backoff = Backoff(base: .seconds(30), cap: .seconds(6 * 3600), jitter: 1.0...1.2)
        package var gaugeInterval: Duration = .seconds(15)
        package init() {}
    }

    package static let applicationName = "diary-server apple"
    /// The revoker's own connections; run it as a service beside the revoker.
    package let pool: PostgresPool
    private let listenConfiguration: PostgresConfiguration
    private let client: AppleIDClient?
    private let vault: AppleTokenVault
    private let options: Options
    private let logger: Logger
    private let warnedWithoutKey = NIOLockedValueBox(false)
    private let wakeups = Wakeups()

    package init(pool: PostgresPool, listenConfiguration: PostgresConfiguration, client: AppleIDClient?, vault: AppleTokenVault, options: Options = Options(), logger: Logger) {
        self.pool = pool
        self.listenConfiguration = listenConfiguration
        self.client = client
        self.vault = vault
        self.options = options
        self.logger = logger
    }

    /// Starts a round now: an account was just deleted.
    package func wake() {
        wakeups.wake()
    }

    /// Runs until cancelled. Without credentials nothing is revoked: rows wait, and the
    /// gauges report them.
    package func run() async {
        var loops: [@Sendable () async -> Void] = [{ await repeating(every: self.options.gaugeInterval, startingAtOnce: true) { await self.recordGauges() } }]
        if let client, client.credentials != nil {
            loops.append { await self.revokeWhenWoken(client) }
            loops += wakeups.wakers(channel: "apple_revocations", listen: listenConfiguration, polling: options.pollInterval, startingAtOnce: true, logger: logger)
        }
        await runWorkerLoops(loops, finishing: wakeups)
    }

    private func revokeWhenWoken(_ client: AppleIDClient) async {
        await wakeups.drainEachRound(
            batchSize: options.batchSize, failure: "apple: the revocation queue cannot be read or settled", logger: logger,
            claim: claim, actAndSettle: { batch in
                for row in batch { try await self.settle(row, await self.revoke(row, with: client)) }
            })
    }

    struct Claimed: Sendable {
        var sealed: SealedAppleToken
        var attempts: Int
    }

    private func claim() async throws -> [Claimed] {
        let rows = try await pool.query("""
            select token_id, client_id, sealed, attempts
            from claim_apple_revocations(\(options.batchSize)::integer, \(options.lease))
            """)
        return try rows.map { row in
            Claimed(
                sealed: SealedAppleToken(
                    sealed: AppleTokenVault.Sealed(tokenID: try row.decode("token_id"), bytes: try row.decode("sealed")),
                    clientID: try row.decode("client_id")),
                attempts: try row.decode("attempts"))
        }
    }

    enum Outcome: Equatable {
        case revoked
        /// Apple refuses the token itself (`invalid_grant`): asking again cannot help.
        case refused(String)
        case retry(String)
    }

    private func revoke(_ row: Claimed, with client: AppleIDClient) async -> Outcome {
        let token: String
        do { token = try vault.open(row.sealed.sealed) } catch {
            return .retry("the sealed token does not open with the secrets key: \(error)")
        }
        switch await client.revoke(refreshToken: token, clientID: row.sealed.clientID) {
        case .ok: return .revoked
        case .refused(400, "invalid_grant"): return .refused("Apple answered 400 invalid_grant")
        case .refused(let status, let error): return .retry("Apple answered \(status) \(error)")
        case .failed(let why): return .retry(why)
        }
    }

    private func settle(_ row: Claimed, _ outcome: Outcome) async throws {
        let tokenID = row.sealed.sealed.tokenID
        let delay = options.backoff.delay(attempt: row.attempts)
        let name: String, error: String
        switch outcome {
        case .revoked: (name, error) = ("revoked", "")
        case .refused(let why): (name, error) = ("failed", why)
        case .retry(let why): (name, error) = ("retry", why)
        }
        let rows = try await pool.query(
            "select finish_apple_revocation(\(tokenID), \(name), \(Int32(delay / .milliseconds(1)))::integer, \(error)) as state")
        let state = try rows.first?.decode("state", as: String?.self) ?? "gone"
        let result: String
        switch (outcome, state) {
        case (.revoked, _):
            result = "revoked"
            logger.info("apple: token revoked", metadata: ["token": "\(tokenID)", "attempt": "\(row.attempts)"])
        case (.refused(let why), _):
            result = "failed"
            logger.error("apple: Apple refuses to revoke the token; recorded as failed", metadata: ["token": "\(tokenID)", "error": "\(why)"])
        case (.retry(let why), "failed"):
            result = "failed"
            logger.error("apple: revocation given up after 7 days", metadata: ["token": "\(tokenID)", "attempts": "\(row.attempts)", "error": "\(why)"])
        case (.retry(let why), _):
            result = "retry"
            logger.notice("apple: revocation will be retried", metadata: ["token": "\(tokenID)", "attempt": "\(row.attempts)", "in": "\(delay)", "error": "\(why)"])
        }
        Counter(label: "apple_revocations_total", dimensions: [("result", result)]).increment()
    }

    private func recordGauges() async {
        do {
            let rows = try await pool.query("select pending, failed from apple_revocation_counts()")
            guard let row = rows.first else { return }
            Gauge(label: "apple_revocations_pending", dimensions: []).record(try row.decode("pending", as: Int.self))
            Gauge(label: "apple_revocations_failed", dimensions: []).record(try row.decode("failed", as: Int.self))
            let pending = try row.decode("pending", as: Int.self)
            if pending > 0, client?.credentials == nil, warnedWithoutKey.withLockedValue({ warned in defer { warned = true }; return !warned }) {
                logger.warning("apple: revocations are waiting, but Sign in with Apple's key is not configured; they stay queued until it is", metadata: ["pending": "\(pending)"])
            }
        } catch {
            logger.warning("apple: counting the revocation queue failed", metadata: ["error": "\(error)"])
        }
    }
}
