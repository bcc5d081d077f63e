import PostgresClient

/// Row rules for `diaries`, mirroring the RLS policies of the same names.
///
/// | policy          | command | USING                        | WITH CHECK                         |
/// |-----------------|---------|------------------------------|------------------------------------|
/// | diaries_select  | SELECT  | members of the diary         |                                    |
/// | diaries_insert  | INSERT  |                              | created_by is the caller           |
/// | diaries_update  | UPDATE  | members (others: 404)        | the caller owns it (members: 403)  |
/// | diaries_delete  | DELETE  | the owner                    |                                    |
///
/// Renaming and rotating the invite code are updates, so only the owner may do them.
enum DiariesPolicy {
    static let diariesSelect: PostgresFragment = "is_diary_member(diaries.id)"
    static let diariesInsert: PostgresFragment = "diaries.created_by = (select app_user_id())"
    static let diariesUpdateUsing: PostgresFragment = "is_diary_member(diaries.id)"
    static let diariesUpdateCheck: PostgresFragment = "is_diary_owner(diaries.id)"
    static let diariesDelete: PostgresFragment = "is_diary_owner(diaries.id)"
}
