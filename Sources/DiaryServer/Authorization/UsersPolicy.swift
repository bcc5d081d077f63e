import PostgresClient

/// Row rules for `users`, twins of the RLS policies of the same names (sql/migrations/0004;
/// users_select as respelt in 0006: a filter on the row found, never a second index key).
///
/// | policy        | command | USING (who sees or affects a row)                  | WITH CHECK                    |
/// |---------------|---------|----------------------------------------------------|-------------------------------|
/// | users_select  | SELECT  | the caller, and members of the caller's diaries    |                               |
/// |               |         | that are not anonymous                             |                               |
/// | users_insert  | INSERT  | nobody: accounts are made by open_session          |                               |
/// | users_update  | UPDATE  | the caller's own row                               | the row is still the caller's |
/// | users_delete  | DELETE  | the caller's own row                               |                               |
///
/// Policies are row rules. Which columns of a co-member leave the server is up to the
/// queries: only `member_profiles` (with its anonymous aliases) reads another user.
enum UsersPolicy {
    static var usersSelect: PostgresFragment { PolicyRule.rule("(users.id = any ((select app_visible_user_ids())::uuid[])) is true") }
    static var usersUpdate: PostgresFragment { PolicyRule.rule("users.id = (select app_user_id())") }
    static var usersDelete: PostgresFragment { PolicyRule.rule("users.id = (select app_user_id())") }
}
