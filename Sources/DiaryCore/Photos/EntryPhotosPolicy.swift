import PostgresClient

/// The twin of the RLS policy on `entry_photos` that statements splice in, among the table's policies.
///
/// | policy               | command | USING                        | WITH CHECK |
/// |----------------------|---------|------------------------------|------------|
/// | entry_photos_select  | SELECT  | members of the photo's diary |            |
/// | entry_photos_insert  | INSERT  |                              | nobody     |
/// | entry_photos_update  | UPDATE  | nobody                       | nobody     |
/// | entry_photos_delete  | DELETE  | nobody                       |            |
///
/// Photos are attached, reordered and dropped only by `set_entry_photos`, which checks
/// that the caller is the entry's author, and deleted with their entry.
package enum EntryPhotosPolicy {
    package static let select = PolicyTwin(
        "entry_photos_select", on: "entry_photos",
        using: PolicyTwin.isTrue("entry_photos.diary_id" + PolicyTwin.isCallersDiary)
    )
}
