import PostgresClient

/// The twin of the RLS policy on `diaries` that statements splice in, among the table's policies.
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
/// the invite code go through `rename_diary` and `rotate_invite_code`, whose
/// `diary_verdict` makes diaries_update's rule itself and tells a 404 from a 403. A new
/// diary and its owner's membership are made together by `create_diary`.
package enum DiariesPolicy {
    package static let select = PolicyTwin(
        "diaries_select", on: "diaries", using: "diaries.id" + PolicyTwin.isCallersDiary, spelling: .isTrue
    )
}
