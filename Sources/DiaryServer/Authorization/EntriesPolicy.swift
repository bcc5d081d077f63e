import Foundation
import PostgresClient

/// Row rules for `entries`, twins of the RLS policies of the same names (sql/migrations/0004).
///
/// | policy          | command | USING                                   | WITH CHECK                             |
/// |-----------------|---------|-----------------------------------------|----------------------------------------|
/// | entries_select  | SELECT  | members of the entry's diary            |                                        |
/// | entries_insert  | INSERT  |                                         | the author is the caller, a member     |
/// | entries_update  | UPDATE  | members (others: 404)                   | the author is the caller (others: 403) |
/// | entries_delete  | DELETE  | members (others: 404), and only the     |                                        |
/// |                 |         | author (others: 403)                    |                                        |
///
/// SQL has no WITH CHECK for DELETE, so entries_delete's USING holds both halves; a
/// member's delete of someone else's entry removes nothing, which the repository
/// reports as 403.
enum EntriesPolicy {
    /// `entries.diary_id = diary` under entries_select. Every read of entries is about one
    /// diary, so the rule is tested once on that value instead of on every row: a second
    /// row-level `= any` on diary_id, next to PostgreSQL's own policy, made the planner expect
    /// no rows and sort a whole diary's entries instead of walking the timeline index.
    static func entriesSelect(inDiary diary: UUID) -> PostgresQuery {
        "entries.diary_id = \(diary) and \(PolicyRule.rule("\(diary) = any ((select app_diary_ids())::uuid[])"))"
    }

    static var entriesInsert: PostgresFragment {
        PolicyRule.rule("(entries.user_id = (select app_user_id()) and entries.diary_id = any ((select app_diary_ids())::uuid[]))")
    }
    static var entriesUpdateUsing: PostgresFragment { PolicyRule.rule("entries.diary_id = any ((select app_diary_ids())::uuid[])") }
    static var entriesUpdateCheck: PostgresFragment { PolicyRule.rule("entries.user_id = (select app_user_id())") }
    static var entriesDeleteUsing: PostgresFragment { PolicyRule.rule("entries.diary_id = any ((select app_diary_ids())::uuid[])") }
    static var entriesDeleteCheck: PostgresFragment { PolicyRule.rule("entries.user_id = (select app_user_id())") }
}
