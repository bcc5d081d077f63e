package import Foundation
package import PostgresClient

/// The twin of the RLS policy on `entries` that statements splice in, among the table's policies.
///
/// | policy          | command | USING                                   | WITH CHECK                             |
/// |-----------------|---------|-----------------------------------------|----------------------------------------|
/// | entries_select  | SELECT  | members of the entry's diary            |                                        |
/// | entries_insert  | INSERT  |                                         | nobody                                 |
/// | entries_update  | UPDATE  | members (others: 404)                   | the author is the caller, still a      |
/// |                 |         |                                         | member (others: 403)                   |
/// | entries_delete  | DELETE  | members (others: 404), and only the     |                                        |
/// |                 |         | author (others: 403)                    |                                        |
///
/// Entries are posted only by `post_entry`, which checks that the caller posts as
/// themselves in one of their diaries, and makes the post's counters, change log and push
/// notifications in the same transaction. `edit_entry` and `delete_entry` make
/// entries_update's and entries_delete's rule themselves (`entry_verdict`), and tell a 404
/// from a 403.
package enum EntriesPolicy {
    /// The policy is spelled `is true`: as an index key, the membership test on each row's
    /// diary (an array) keeps a btree from returning the diary's timeline in its order, and
    /// with statistics that predate a diary's growth the planner then sorted the whole diary
    /// for one page (PlanGuardTests). As a filter it costs nothing the twin's key does not pay.
    package static let select = PolicyTwin(
        "entries_select", on: "entries", using: "entries.diary_id" + PolicyTwin.isCallersDiary, spelling: .isTrue
    )

    /// entries_select for the entries of one diary: `entries.diary_id = diary`, with the
    /// twin's membership test made once on that value. Every read of entries is about one
    /// diary, and a membership test on each row's diary_id, beside PostgreSQL's own, makes
    /// the planner expect no rows and sort the diary instead of walking its timeline index.
    package static func select(inDiary diary: UUID) -> PostgresQuery {
        "entries.diary_id = \(diary) and \(PolicyRule.rule("\(diary)\(PolicyTwin.isCallersDiary)"))"
    }
}
