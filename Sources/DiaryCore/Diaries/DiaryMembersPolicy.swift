import PostgresClient

/// The twin of the RLS policy on `diary_members` that statements splice in, among the table's policies.
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
/// Removing a member goes through `remove_diary_member`, which applies diary_members_delete
/// itself and hands ownership on.
package enum DiaryMembersPolicy {
    package static let select = PolicyTwin(
        "diary_members_select", on: "diary_members", using: "diary_members.diary_id" + PolicyTwin.isCallersDiary
    )
}
