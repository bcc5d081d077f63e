import PostgresClient

/// Row rules for `diary_members`, mirroring the RLS policies of the same names.
///
/// | policy                | command | USING                                         | WITH CHECK                         |
/// |-----------------------|---------|-----------------------------------------------|------------------------------------|
/// | diary_members_select  | SELECT  | co-members (members of the same diary)        |                                    |
/// | diary_members_insert  | INSERT  |                                               | only the caller themself, and only |
/// |                       |         |                                               | through join_diary or as the owner |
/// |                       |         |                                               | of a diary they just created       |
/// | diary_members_update  | UPDATE  | nobody: roles change only with DELETE /v1/me  |                                    |
/// | diary_members_delete  | DELETE  | co-members (others: 404)                      | the row is the caller's own, or    |
/// |                       |         |                                               | the caller owns the diary (403)    |
enum DiaryMembersPolicy {
    static let diaryMembersSelect: PostgresFragment = "is_diary_member(diary_members.diary_id)"
    static let diaryMembersInsert: PostgresFragment = "diary_members.user_id = (select app_user_id())"
    static let diaryMembersDeleteUsing: PostgresFragment = "is_diary_member(diary_members.diary_id)"
    static let diaryMembersDeleteCheck: PostgresFragment =
        "(diary_members.user_id = (select app_user_id()) or is_diary_owner(diary_members.diary_id))"
}
