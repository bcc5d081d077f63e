import PostgresClient

/// Row rules for `diaries`, twins of the RLS policies of the same names (sql/migrations/0004).
///
/// 0006 spells diaries_select `(…) is true`, so that PostgreSQL checks it on the row it
/// found rather than as a second index key. The twin keeps the plain spelling because it
/// is an access path here: GET /v1/diaries finds the caller's diaries through it.
///
/// | policy          | command | USING                        | WITH CHECK                         |
/// |-----------------|---------|------------------------------|------------------------------------|
/// | diaries_select  | SELECT  | members of the diary         |                                    |
/// | diaries_insert  | INSERT  |                              | created_by is the caller           |
/// | diaries_update  | UPDATE  | members (others: 404)        | the caller owns it (members: 403)  |
/// | diaries_delete  | DELETE  | the owner                    |                                    |
///
/// Renaming and rotating the invite code are updates, so only the owner may do them.
/// A new diary and its owner's membership are made together by `create_diary`.
enum DiariesPolicy {
    static var diariesSelect: PostgresFragment { PolicyRule.rule("diaries.id = any ((select app_diary_ids())::uuid[])") }
    static var diariesInsert: PostgresFragment { PolicyRule.rule("diaries.created_by = (select app_user_id())") }
    static var diariesUpdateUsing: PostgresFragment { PolicyRule.rule("diaries.id = any ((select app_diary_ids())::uuid[])") }
    static var diariesUpdateCheck: PostgresFragment { PolicyRule.rule("is_diary_owner(diaries.id)") }
    static var diariesDelete: PostgresFragment { PolicyRule.rule("is_diary_owner(diaries.id)") }
}
