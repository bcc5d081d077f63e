package import DiaryModels
package import Foundation
import PostgresClient

/// The diaries the caller left, while they are still theirs: a departure keeps the caller's
/// right to export their own entries for `window`, and a closed diary (its last member
/// left) may be restored by any former member who left it (not one its owner removed) until
/// its deletion date.
package struct DepartureRepository: Sendable {
    let scope: RequestScope
    /// `CLOSED_DIARY_RETENTION_DAYS`.
    let window: Duration

    package init(scope: RequestScope, window: Duration) {
        self.scope = scope
        self.window = window
    }

    /// Newest departure first; only those whose window is open.
    package func list() async throws -> [Departure] {
        let rows = try await scope.read(Self.listStatement(window: window))
        return try rows.map(Self.departure)
    }

    static func listStatement(window: Duration) -> PostgresQuery {
        "select * from my_departures(\(window))"
    }

    static func departure(from row: PostgresRow) throws -> Departure {
        guard let type = DiaryType(rawValue: try row.decode("type")) else { throw DomainError.inconsistent("a diary of an unknown type") }
        return Departure(
            diaryId: try row.decode("diary_id"), name: try row.decode("name"), type: type, leftAt: try row.decode("left_at"),
            closedAt: try row.decode("closed_at"), keptUntil: try row.decode("kept_until"), ownEntries: try row.decode("own_entries"),
            restorable: try row.decode("restorable"))
    }

    /// Opens a closed diary again with the caller as its owner and a new invite code, answered
    /// as any diary is, in the restore's own transaction. Only a former member after whose
    /// departure nobody changed the diary may (`departure_restorable`); on the free plan it
    /// counts as a creation (`premium_required` past `freePlanDiaries`).
    package func restore(_ diary: UUID, freePlanDiaries: Int) async throws -> Diary {
        let results = try await scope.run(
            ["select restore_diary(\(diary), \(window), \(freePlanDiaries)::integer) as outcome"],
            thenRead: [DiaryRepository.readBack("\(diary)")]
        )
        if try results[0].first?.decode("outcome", as: String?.self) == "open" {
            throw DomainError(.conflict, "the diary still has members: join it with its invite code")
        }
        try PolicyTwin.requireDone(
            results[0], missing: "no closed diary of yours to restore",
            forbidden: "the diary changed after you left, so restoring it would show you what you never saw as a member; you may still export your own entries (GET /v1/me/export)")
        guard let row = results[1].first else { throw DomainError.inconsistent("the restored diary cannot be read back") }
        return try DiaryRepository.diary(from: row, invites: scope.inviteLinks, links: scope.photoLinks)
    }

    /// The diaries whose own entries the personal export carries besides the current ones.
    package static func exportable(_ reader: RequestScope.SnapshotReader, window: Duration) async throws -> [UUID] {
        let rows = try await reader.read("select departed_diary_ids(\(window)) as ids")
        return try rows.first?.decodeAggregate("ids", as: UUID.self) ?? []
    }
}
