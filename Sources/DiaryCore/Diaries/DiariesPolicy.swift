import PostgresClient

/// Twins of the RLS policies on `diaries` that statements splice in.
///
/// | policy          | command | USING                        | WITH CHECK                         |
/// |-----------------|---------|------------------------------|------------------------------------|
/// | diaries_select  | SELECT  | members of the diary         |                                    |
/// | diaries_insert  | INSERT  |                              | created_by is the caller           |
/// | diaries_update  | UPDATE  | members (others: 404)        | the caller owns it (members: 403)  |
/// | diaries_delete  | DELETE  | the owner                    |                                    |
///
/// diaries_select's twin keeps the plain spelling (see `PolicyTwin.Spelling.isTrue`)
/// because GET /v1/diaries finds the caller's diaries through it. Renaming and rotating
/// the invite code are updates, so only the owner may do them. A new diary and its
/// owner's membership are made together by `create_diary`.
package enum DiariesPolicy {
    package static let select = PolicyTwin(
        "diaries_select", on: "diaries", key: ["id"], using: "diaries.id" + PolicyTwin.isCallersDiary, spelling: .isTrue
    )
    package static let update = PolicyTwin(
        "diaries_update", on: "diaries", key: ["id"], using: "diaries.id" + PolicyTwin.isCallersDiary, check: "is_diary_owner(diaries.id)"
    )
}
