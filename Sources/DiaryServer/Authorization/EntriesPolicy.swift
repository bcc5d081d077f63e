import PostgresClient

/// Row rules for `entries`, mirroring the RLS policies of the same names.
///
/// | policy          | command | USING                         | WITH CHECK                                  |
/// |-----------------|---------|-------------------------------|---------------------------------------------|
/// | entries_select  | SELECT  | members of the entry's diary  |                                             |
/// | entries_insert  | INSERT  |                               | author is the caller, and the caller is a   |
/// |                 |         |                               | member of the diary                         |
/// | entries_update  | UPDATE  | members (others: 404)         | the caller is the author (others: 403)      |
/// | entries_delete  | DELETE  | members (others: 404)         | the caller is the author (others: 403)      |
enum EntriesPolicy {
    static let entriesSelect: PostgresFragment = "is_diary_member(entries.diary_id)"
    static let entriesInsert: PostgresFragment =
        "(entries.user_id = (select app_user_id()) and is_diary_member(entries.diary_id))"
    static let entriesUpdateUsing: PostgresFragment = "is_diary_member(entries.diary_id)"
    static let entriesUpdateCheck: PostgresFragment = "entries.user_id = (select app_user_id())"
    static let entriesDeleteUsing: PostgresFragment = "is_diary_member(entries.diary_id)"
    static let entriesDeleteCheck: PostgresFragment = "entries.user_id = (select app_user_id())"
}
