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

    @Test("data safety: null times while backups are off; the newest backup and its verification once on; entries from the counters")
    func dataSafety() async throws {
        for enabled in [false, true] {
            try await APIHarness.run(export: ExportConfiguration(backupsEnabled: enabled)) { api in
                let couple = try await EntryPhotoTests.couple(api)
                for text in ["一", "二"] { #expect(try await api.post(text, in: couple.diary.id, token: couple.alice.accessToken).status == .created) }
                let before = try await api.call(.get, "/v1/data-safety", token: couple.bob.accessToken)
                #expect(before.text.contains(#""lastBackupAt":null"#) && before.text.contains(#""lastVerifiedAt":null"#), "\(before.text)")
                #expect(try before.decode(DataSafety.self) == DataSafety(lastBackupAt: nil, lastVerifiedAt: nil, backupVerified: false, entriesProtected: 2))
                try await api.asSuperuser("""
                    insert into backup_runs (started_at, finished_at, location, entry_count, entries_checksum, verified_at, verified)
                    values ('2026-11-24T03:00:00Z', '2026-11-24T03:01:00Z', 'a', 2, 'x', '2026-11-24T03:02:00Z', true),
                           ('2026-11-25T03:00:00Z', '2026-11-25T03:01:00Z', 'b', 2, 'x', null, null)
                    """)
                let after = try await api.call(.get, "/v1/data-safety", token: couple.bob.accessToken).decode(DataSafety.self)
                if enabled {
                    #expect(after.lastBackupAt == ISO8601DateFormatter().date(from: "2026-11-25T03:01:00Z") && after.lastVerifiedAt == ISO8601DateFormatter().date(from: "2026-11-24T03:02:00Z"))
                    #expect(after.backupVerified == false, "the newest backup is not verified yet")
                } else {
                    #expect(after.lastBackupAt == nil && after.lastVerifiedAt == nil && !after.backupVerified)
                }
                let stranger = try await api.signIn("Mallory")
                #expect(try await api.call(.get, "/v1/data-safety", token: stranger.accessToken).decode(DataSafety.self).entriesProtected == 0)
            }
        }
    }
}
