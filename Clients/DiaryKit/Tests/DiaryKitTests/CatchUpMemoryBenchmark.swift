import DiaryKit
import Foundation
import Testing

/// Benchmarks/diarykit-catchup.sh: the memory a 10,000-change catch-up holds, read page by
/// page as `catchUp` yields it, against every page gathered first (what catchUp did before
/// DiaryKit 2). A benchmark, not a test: it runs only when DIARYKIT_BENCH_CATCHUP is set, and
/// prints its figures.
@Suite("catchUp memory (benchmark)", .enabled(if: ProcessInfo.processInfo.environment["DIARYKIT_BENCH_CATCHUP"] != nil))
struct CatchUpMemoryBenchmark {
    static let changes = 10_000

    /// The process's resident memory now, from /proc/self/status (Linux), in KiB.
    static func residentKiB() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(whereSeparator: \.isWhitespace).dropFirst().first ?? "") ?? 0
    }

    @Test("10,000 changes: one page held at a time, against all of them")
    func catchUpMemory() async throws {
        try await LiveServer.with { server in
            let (aiko, _, diary) = try await server.couple("catch-up")
            let cursor = try #require(try await aiko.diary(id: diary.id).changesCursor)
            // 10,000 entries of 400 characters, each logged as post_entry logs it, in the one
            // transaction its guard lets write entries (app.writer).
            let sql = """
                begin;
                select set_config('app.writer', 'post_entry', true);
                with written as (
                    insert into entries (diary_id, user_id, content)
                    select d.id, d.created_by, repeat('今日はいい日だった。', 40) from diaries d, generate_series(1, \(Self.changes))
                    where d.id = '\(diary.id)' returning diary_id, id)
                select count(log_change(diary_id, 'entry.created', id)) from written;
                commit;
                """
            _ = try await LiveServer.run("/usr/bin/env", ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-U", "postgres",
                                                          "-d", server.database, "-c", sql])
            let baseline = Self.residentKiB()
            var streamedPeak = baseline
            var streamed = 0
            for try await step in aiko.catchUp(diaryID: diary.id, from: cursor) {
                if case .changes(let page, _) = step { streamed += page.count }
                streamedPeak = max(streamedPeak, Self.residentKiB())
            }
            var gathered: [DiaryChange] = []
            for try await step in aiko.catchUp(diaryID: diary.id, from: cursor) {
                if case .changes(let page, _) = step { gathered += page }
            }
            let gatheredResident = Self.residentKiB()
            #expect(streamed == Self.changes && gathered.count == Self.changes)
            print("""
                catchUp of \(Self.changes) changes (400-character entries), pages of 500:
                  streamed, one page held at a time: peak resident +\(streamedPeak - baseline) KiB over \(baseline) KiB
                  gathered, every page held (DiaryKit 1): resident +\(gatheredResident - baseline) KiB over \(baseline) KiB
                """)
        }
    }
}
