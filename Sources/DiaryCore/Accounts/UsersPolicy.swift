import PostgresClient

/// The twin of the RLS policy on `users` that statements splice in, among the table's policies.
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
/// queries: only `member_profiles` (with its anonymous aliases) reads another user. The
/// caller changes their own row through `update_me`, which writes that row alone.
package enum UsersPolicy {
    package static let select = PolicyTwin(
        "users_select", on: "users", using: PolicyTwin.isTrue("users.id = any ((select app_visible_user_ids())::uuid[])")
    )
}
