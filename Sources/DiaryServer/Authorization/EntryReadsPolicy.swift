import PostgresClient

/// Row rules for `entry_reads`, mirroring the RLS policies of the same names.
///
/// | policy              | command        | USING                            | WITH CHECK                          |
/// |---------------------|----------------|----------------------------------|-------------------------------------|
/// | entry_reads_select  | SELECT         | members of the entry's diary     |                                     |
/// | entry_reads_insert  | INSERT/UPDATE  |                                  | only as the caller, a member, and   |
/// |                     |                |                                  | only through mark_as_read           |
/// | entry_reads_delete  | DELETE         | nobody: a read stays read        |                                     |
enum EntryReadsPolicy {
    static let entryReadsSelect: PostgresFragment = "is_diary_member(entry_reads.diary_id)"
}
