import DiaryModels
import Foundation
import Hummingbird
import Testing
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

@Suite("Metrics and request ids")
struct MetricsTests {
    @Test("GET /metrics: requests and latency per route and status, pool gauges, database errors by class, rate limits")
    func prometheusExposition() async throws {
        try await APIHarness.run { api in
            let aiko = try await api.signIn("aiko")
            let diary = try await api.createDiary("日記", type: .couple, token: aiko.accessToken)
            #expect(try await api.post("はじめまして", in: diary.id, token: aiko.accessToken).status == .created)
            // A duplicate key in one table is a class-23 error the server answers as a conflict.
            let entryID = UUID()
            _ = try await api.post("一回目", in: diary.id, token: aiko.accessToken, id: entryID)
            try await api.asSuperuser("create unique index metrics_test_content on entries (content)")
            #expect(try await api.post("一回目", in: diary.id, token: aiko.accessToken).status == .conflict)
            for attempt in 0..<11 { _ = try await api.join("WRONG\(attempt)", token: aiko.accessToken) }

            let reply = try await api.call(.get, "/metrics")
            #expect(reply.status == .ok)
            #expect(reply.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
            let text = reply.text
            #expect(text.contains(#"http_requests_total{route="/v1/diaries/{diaryId}/entries",method="POST",status="201"}"#), "\(text)")
            #expect(text.contains(#"http_request_duration_seconds_bucket{route="/v1/diaries/{diaryId}/entries",method="POST",status="201",le="0.005"}"#))
            #expect(text.contains(#"http_requests_total{route="/v1/diaries/join",method="POST",status="429"}"#))
            #expect(text.contains(#"db_pool_connections{state="idle"}"#))
            #expect(text.contains(#"db_pool_connections{state="in_use"}"#))
            #expect(text.contains("db_pool_waiting"))
            #expect(text.contains("db_pool_shared_pipelines"))
            #expect(text.contains(#"db_errors_total{class="23"}"#))
            // Wrong invite codes are refusals by design, counted apart; every error label is a SQLSTATE class.
            #expect(text.contains(#"db_refusals_total{code="invite_code_invalid"}"#), "\(text)")
            let classes = text.split(separator: "\n").filter { $0.hasPrefix("db_errors_total{") }.compactMap { $0.firstMatch(of: /class="([^"]*)"/).map { String($0.1) } }
            #expect(classes.allSatisfy { $0.count == 2 && $0.allSatisfy { $0.isNumber || $0.isUppercase } && !$0.hasPrefix("ZN") }, "\(classes)")
            #expect(text.contains(#"rate_limit_rejections_total{limit="join_attempts"}"#))
        }
    }

    @Test("each benchmarked request is one round trip to Postgres: POST entry, GET timeline, POST read, GET /v1/diaries, POST join")
    func oneRoundTripPerRequest() async throws {
        try await APIHarness.run { api in
            for request in try await BenchmarkedRequest.prepare(api) {
                let before = api.pool.statistics.roundTrips
                let reply = try await api.call(request.method, request.path, token: request.token, json: request.json)
                #expect(reply.status.code < 300, "\(request.script): \(reply.status)")
                #expect(api.pool.statistics.roundTrips - before == 1, "\(request.script)")
            }
        }
    }

    @Test("every response carries X-Request-Id, the id in the request's log lines and in 5xx problems")
    func requestID() async throws {
        try await APIHarness.run { api in
            let first = try await api.call(.get, "/health")
            let second = try await api.call(.get, "/v1/nowhere")
            let firstID = try #require(first.headers[RequestIDMiddleware<AppRequestContext>.header])
            let secondID = try #require(second.headers[RequestIDMiddleware<AppRequestContext>.header])
            #expect(!firstID.isEmpty && firstID != secondID)
        }
    }
}
