import PostgresClient
import Testing
import TestSupport

@Suite("Backoff, and spans bound as intervals")
struct BackoffTests {
    @Test("base × 2^(attempt−1), capped; jitter stays within its factors; a success starts over")
    func delays() {
        let exact = Backoff(base: .milliseconds(100), cap: .seconds(1))
        #expect((1...6).map { exact.delay(attempt: $0) } == [.milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .seconds(1), .seconds(1)])
        #expect(exact.delay(attempt: 10_000) == .seconds(1))
        let jittered = Backoff(base: .seconds(1), cap: .seconds(600), jitter: 0.5...1.0)
        let draws = (0..<1000).map { _ in jittered.delay(attempt: 3) }
        #expect(draws.allSatisfy { $0 >= .seconds(2) && $0 <= .seconds(4) })
        #expect(Set(draws).count > 1, "jitter draws")
        var attempts = Backoff.Attempts(exact)
        #expect([attempts.failed(), attempts.failed()] == [.milliseconds(100), .milliseconds(200)])
        attempts.succeeded()
        #expect(attempts.failed() == .milliseconds(100))
    }

    @Test("a Duration binds as an interval to the microsecond, sub-second part included")
    func intervalBind() async throws {
        try await TestDatabase.with { configuration in
            try await TestDatabase.withPool(configuration, size: 1) { pool in
                let row = try #require(try await pool.query("""
                    select \(Duration.milliseconds(1500))::text as short, \(Duration.seconds(6 * 3600))::text as long,
                        extract(epoch from \(Duration.microseconds(2_500_001)))::text as epoch
                    """).first)
                #expect(try row.decode("short", as: String.self) == "00:00:01.5")
                #expect(try row.decode("long", as: String.self) == "06:00:00")
                #expect(try row.decode("epoch", as: String.self) == "2.500001")
            }
        }
    }
}
