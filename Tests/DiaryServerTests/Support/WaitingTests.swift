import Testing
import TestSupport

/// The test helpers' one way to bound a wait has to fail on time, or a hung test holds CI for an hour.
@Suite("Waiting")
struct WaitingTests {
    @Test("withTimeLimit fails at its limit even when the operation ignores its cancellation")
    func timeLimitOnUncooperativeOperation() async throws {
        // A task that never looks at cancellation, as `Task.value` and a blocked read do not. It
        // ends only when the gate opens, which a last resort does after a minute.
        let gate = AsyncStream<Void>.makeStream()
        let opened = LockedValue(false)
        let uncooperative = Task { for await _ in gate.stream {} }
        let lastResort = Task {
            try await pace(.seconds(60))
            opened.value = true
            gate.continuation.finish()
        }
        await #expect(throws: TimedOut.self) {
            try await withTimeLimit("an uncooperative wait", within: .milliseconds(200)) { await uncooperative.value }
        }
        #expect(!opened.value, "the time limit waited for the operation to end")
        lastResort.cancel()
        gate.continuation.finish()
    }

    @Test("withTimeLimit returns the operation's value and passes on its error")
    func timeLimitPassesThrough() async throws {
        #expect(try await withTimeLimit("a value", within: .seconds(30)) { 7 } == 7)
        struct Refused: Error {}
        await #expect(throws: Refused.self) {
            try await withTimeLimit("an error", within: .seconds(30)) { () async throws -> Int in throw Refused() }
        }
    }
}
