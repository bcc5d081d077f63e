import PostgresClient

/// Row rules for `users`, mirroring the RLS policies of the same names.
///
/// | policy        | command | USING (who sees or affects a row)                  | WITH CHECK                |
/// |---------------|---------|----------------------------------------------------|---------------------------|
/// | users_select  | SELECT  | the caller's own row, in full; a co-member's row,  |                           |
/// |               |         | public profile only (id, display name, image)      |                           |
/// | users_insert  | INSERT  | nobody: accounts are made by sign-in, not by users |                           |
/// | users_update  | UPDATE  | the caller's own row                               | the row is still the caller's |
/// | users_delete  | DELETE  | the caller's own row                               |                           |
///
/// The public profile of a co-member is served through `member_profiles`, which applies
/// anonymous aliases; no query here selects another user's email, settings or premium.
enum UsersPolicy {
    static let usersSelectOwn: PostgresFragment = "users.id = (select app_user_id())"
    static let usersUpdate: PostgresFragment = "users.id = (select app_user_id())"
    static let usersDelete: PostgresFragment = "users.id = (select app_user_id())"
}
