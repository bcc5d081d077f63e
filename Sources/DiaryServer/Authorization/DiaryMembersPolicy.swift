import PostgresClient

/// Row rules for `diary_members`, twins of the RLS policies of the same names (sql/migrations/0004).
///
/// | policy                | command | USING                                  | WITH CHECK                           |
/// |-----------------------|---------|----------------------------------------|--------------------------------------|
/// | diary_members_select  | SELECT  | members of the same diary              |                                      |
/// | diary_members_insert  | INSERT  |                                        | nobody directly: join_diary adds the |
/// |                       |         |                                        | caller, create_diary the owner       |
/// | diary_members_update  | UPDATE  | nobody: ownership passes only inside   |                                      |
/// |                       |         | remove_diary_member/delete_my_account  |                                      |
/// | diary_members_delete  | DELETE  | co-members (others: 404), and only the |                                      |
/// |                       |         | caller's own row or as owner (403)     |                                      |
///
/// Removing a member goes through `remove_diary_member`, which hands ownership on.
enum DiaryMembersPolicy {
    static var diaryMembersSelect: PostgresFragment { PolicyRule.rule("diary_members.diary_id = any ((select app_diary_ids())::uuid[])") }
    static var diaryMembersDeleteUsing: PostgresFragment { PolicyRule.rule("diary_members.diary_id = any ((select app_diary_ids())::uuid[])") }
    static var diaryMembersDeleteCheck: PostgresFragment {
        PolicyRule.rule("(diary_members.user_id = (select app_user_id()) or is_diary_owner(diary_members.diary_id))")
    }
}
