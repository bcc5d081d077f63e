import PostgresClient

/// Row rules for `entry_reads`, twins of the RLS policies of the same names (sql/migrations/0004;
/// entry_reads_select as respelt in 0006: a filter on the row found, never a second index key).
///
/// | policy              | command | USING                          | WITH CHECK                          |
/// |---------------------|---------|--------------------------------|-------------------------------------|
/// | entry_reads_select  | SELECT  | members of the entry's diary   |                                     |
/// | entry_reads_insert  | INSERT  |                                | the reader is the caller, a member  |
/// | entry_reads_update  | UPDATE  | the caller's own reads         | still the caller's, still a member  |
/// | entry_reads_delete  | DELETE  | nobody: a read stays read      |                                     |
///
/// Reads are written only by `mark_as_read`, which runs as the caller under these policies.
enum EntryReadsPolicy {
    static var entryReadsSelect: PostgresFragment { PolicyRule.rule("(entry_reads.diary_id = any ((select app_diary_ids())::uuid[])) is true") }
}
