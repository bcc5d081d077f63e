import DiaryModels
import Foundation
import HTTPTypes
import PostgresClient
import TestSupport
import Testing

@testable import DiaryCore
@testable import DiaryHTTP

/// The six months' promise in the product: maintenance, the minimum app version, notices.
@Suite("Service status")
struct ServiceStatusTests {
    static let version = HTTPField.Name("X-App-Version")!

    @Test("maintenance: writes get 503 maintenance with Retry-After; reads, exports and sign-in go on")
    func maintenance() async throws {
        try await APIHarness.run(serviceStatus: ServiceStatusConfiguration(maintenance: true)) { api in
            let alice = try await api.signIn("Alice")
            let refused = try await api.call(.post, "/v1/diaries", token: alice.accessToken, body: CreateDiaryRequest(name: "日記", type: .couple))
            #expect(refused.status == .serviceUnavailable && refused.code == "maintenance")
            #expect(refused.headers[.retryAfter] == "300")
            #expect(try await api.call(.patch, "/v1/me", token: alice.accessToken, json: #"{"displayName":"A"}"#).code == "maintenance")
            #expect(try await api.call(.get, "/v1/me", token: alice.accessToken).status == .ok)
            #expect(try await api.call(.get, "/v1/diaries", token: alice.accessToken).status == .ok)
            #expect(try await api.call(.get, "/v1/me/export", token: alice.accessToken).status == .ok)
            #expect(try await api.call(.post, "/v1/auth/refresh", json: #"{"refreshToken":"\#(alice.refreshToken)"}"#).status == .ok)
            let status = try await api.call(.get, "/v1/service-status").decode(ServiceStatus.self)
            #expect(status.maintenance && status.minimumAppVersion == nil)
        }
    }

    @Test("an app below MINIMUM_APP_VERSION gets 426 everywhere but service-status and export; no header or a newer one passes")
    func minimumVersion() async throws {
        try await APIHarness.run(serviceStatus: ServiceStatusConfiguration(minimumAppVersion: AppVersion("2.1"))) { api in
            let alice = try await api.signIn("Alice")
            let diary = try await api.createDiary("日記", type: .couple, token: alice.accessToken)
            func get(_ path: String, _ version: String?) async throws -> APIHarness.Reply {
                try await api.call(.get, path, token: alice.accessToken, headers: version.map { [Self.version: $0] } ?? [:])
            }
            let old = try await get("/v1/diaries", "2.0.9")
            #expect(old.status == .upgradeRequired && old.code == "upgrade_required")
            #expect(try await api.call(.post, "/v1/auth/dev", json: #"{"name":"Bob"}"#, headers: [Self.version: "1.0"]).status == .upgradeRequired)
            #expect(try await get("/v1/diaries", "2.1.0").status == .ok)
            #expect(try await get("/v1/diaries", "10.0").status == .ok, "compared as numbers, not text")
            #expect(try await get("/v1/diaries", nil).status == .ok)
            #expect(try await get("/v1/diaries", "2.x").code == "validation_failed")
            #expect(try await get("/v1/service-status", "1.0").status == .ok)
            #expect(try await get("/v1/diaries/\(diary.id)/export", "1.0").status == .ok, "an old app can still take its data out")
            #expect(try await get("/v1/me/export", "1.0").status == .ok)
            #expect(try await get("/v1/service-status", nil).decode(ServiceStatus.self).minimumAppVersion == "2.1.0")
        }
    }

    @Test("AppVersion compares numerically and refuses what is not x[.y[.z]]")
    func appVersion() {
        #expect(AppVersion("1.10.0")! > AppVersion("1.9.9")!)
        #expect(AppVersion("2")! == AppVersion("2.0.0")!)
        for bad in ["", "1.", ".1", "1.2.3.4", "v1", "1.-2", "1..2", "1234567.0"] { #expect(AppVersion(bad) == nil, "\(bad)") }
    }

    @Test("notices: a shutdown needs 183 days' notice from the CLI and from the schema; the rest is listed newest first")
    func notices() async throws {
        try await APIHarness.run { api in
            let owner = try ServerProcess.url(of: api.database.as(TestDatabase.ownerRole))
            func notice(_ arguments: [String]) async throws -> (status: Int32, output: String) {
                try await ServerProcess.runCommand(["notice"] + arguments + ["--database-url", owner])
            }
            let day: (Int) -> String = { days in
                let formatter = DateFormatter()
                formatter.dateFormat = "yyyy-MM-dd"
                formatter.timeZone = TimeZone(identifier: "UTC")
                formatter.locale = Locale(identifier: "en_US_POSIX")
                return formatter.string(from: Date().addingTimeInterval(Double(days) * 86_400))
            }
            let info = try await notice(["add", "--title", "メンテナンスのお知らせ", "--body", "12月1日 2:00–3:00"])
            #expect(info.status == 0, "\(info.output)")
            let soon = try await notice(["add", "--kind", "shutdown", "--title", "終了", "--body", "終了します", "--effective", day(182)])
            #expect(soon.status != 0 && soon.output.contains("183 days"), "\(soon.output)")
            let missing = try await notice(["add", "--kind", "shutdown", "--title", "終了", "--body", "終了します"])
            #expect(missing.status != 0)
            let shutdown = try await notice(["add", "--kind", "shutdown", "--title", "サービス終了", "--body", "エクスポートは終了後も可能です", "--effective", day(184)])
            #expect(shutdown.status == 0, "\(shutdown.output)")

            await #expect(throws: PostgresError.self, "the schema holds the rule for any writer") {
                try await api.asSuperuser("insert into service_notices (kind, title, body, effective_on) values ('shutdown', 't', 'b', current_date + 30)")
            }

            let status = try await api.call(.get, "/v1/service-status").decode(ServiceStatus.self)
            #expect(status.notices.map(\.kind) == [.shutdown, .info])
            #expect(status.notices.first?.effectiveOn == day(184) && status.maintenance == false)
            let listed = try await notice(["list"])
            #expect(listed.output.contains("サービス終了") && listed.output.contains("メンテナンスのお知らせ"))
            let id = String(info.output.split(separator: "\n").last ?? "")
            #expect(try await notice(["remove", id]).status == 0)
            #expect(try await api.call(.get, "/v1/service-status").decode(ServiceStatus.self).notices.count == 1)
        }
    }
}
