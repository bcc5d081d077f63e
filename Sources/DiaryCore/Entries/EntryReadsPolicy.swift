import PostgresClient

/// The twin of the RLS policy on `entry_reads` that statements splice in, among the table's policies.
///
/// | policy              | command | USING                          | WITH CHECK                          |
/// |---------------------|---------|--------------------------------|-------------------------------------|
/// | entry_reads_select  | SELECT  | members of the entry's diary   |                                     |
/// | entry_reads_insert  | INSERT  |                                | the reader is the caller, a member  |
/// | entry_reads_update  | UPDATE  | the caller's own reads         | still the caller's, still a member  |
/// | entry_reads_delete  | DELETE  | nobody: a read stays read      |                                     |
///
/// Reads are written only by `mark_as_read`, which runs as the caller under these policies.
package enum EntryReadsPolicy {
    package static let select = PolicyTwin(
        "entry_reads_select", on: "entry_reads",
        using: PolicyTwin.isTrue("entry_reads.diary_id" + PolicyTwin.isCallersDiary)
    )
}
