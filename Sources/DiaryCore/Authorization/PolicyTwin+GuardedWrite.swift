package import PostgresClient

/// Writes under an UPDATE or DELETE policy that tell "not there" from "not allowed".
///
/// PostgreSQL's policy hides a row the caller may not see and silently skips one they
/// may not change. The statement therefore first selects the target under USING, with
/// WITH CHECK as a `permitted` column, writes only where it is true, and answers one row
/// per visible target. `requirePermitted` reads that answer: no row is a 404, false a 403.
extension PolicyTwin {
    /// `update <table> set <assignments>` on the row `row` names. The answer has `permitted`,
    /// and with `returning`, that column of the changed row (NULL where nothing changed).
    package func guardedUpdate(set assignments: PostgresQuery, where row: PostgresQuery, returning column: PostgresFragment? = nil) -> PostgresQuery {
        let returned: PostgresFragment = column.map { table + "." + $0 } ?? lastKeyColumn
        let answer: PostgresFragment = column.map { "target.permitted, (select " + $0 + " from changed) as " + $0 } ?? "permitted"
        return """
            \(target(row)), changed as (
                update \(table) set \(assignments) from target
                where \(keyMatch) and target.permitted
                returning \(returned)
            )
            select \(answer) from target
            """
    }

    /// `delete from <table>` of the row `row` names. A delete that the policy refuses after
    /// Swift allowed it removes nothing, and is answered as not permitted too.
    package func guardedDelete(where row: PostgresQuery) -> PostgresQuery {
        """
        \(target(row)), removed as (
            delete from \(table) using target
            where \(keyMatch) and target.permitted
            returning \(lastKeyColumn)
        )
        select permitted and exists (select 1 from removed) as permitted from target
        """
    }

    /// Reads a guarded write's answer: no row is `missing` (404), not permitted is `forbidden` (403).
    package static func requirePermitted(_ rows: PostgresRows, missing: String, forbidden: String) throws {
        guard let row = rows.first else { throw DomainError.notFound(missing) }
        guard try row.decode("permitted", as: Bool.self) else { throw DomainError.forbidden(forbidden) }
    }

    /// Reads the answer of a function that writes and applies the policies itself
    /// (`edit_entry`, `delete_entry`, `rename_diary`, `remove_diary_member`) in the column
    /// `outcome`: `not_found` (or no answer) is `missing` (404), `forbidden` is `forbidden` (403).
    package static func requireDone(_ rows: PostgresRows, missing: String, forbidden: String) throws {
        switch try rows.first?.decode("outcome", as: String?.self) {
        case "forbidden": throw DomainError.forbidden(forbidden)
        case "not_found", nil: throw DomainError.notFound(missing)
        default: return
        }
    }

    /// The row `row` names, if the caller sees it (USING), with WITH CHECK as `permitted`.
    private func target(_ row: PostgresQuery) -> PostgresQuery {
        """
        with target as (
            select \(keyColumns), \(check) as permitted
            from \(table) where \(row) and \(using)
        )
        """
    }

    /// `entries.id`: what a write returns to show it happened.
    private var lastKeyColumn: PostgresFragment { table + "." + key[key.count - 1] }

    /// `diaries.id` or `entries.diary_id, entries.id`.
    private var keyColumns: PostgresFragment {
        key.dropFirst().reduce(table + "." + key[0]) { $0 + ", " + table + "." + $1 }
    }

    /// `entries.diary_id = target.diary_id and entries.id = target.id`.
    private var keyMatch: PostgresFragment {
        key.dropFirst().reduce(table + "." + key[0] + " = target." + key[0]) { $0 + " and " + table + "." + $1 + " = target." + $1 }
    }
}
