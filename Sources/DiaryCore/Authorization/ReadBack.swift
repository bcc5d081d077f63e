package import PostgresClient

/// What a write answers with: read as the caller, after the write's statements, in the
/// write's own transaction (`RequestScope.run(_:thenRead:)`), so that a committed write
/// always answers with what it wrote, and a read that fails rolls the write back with it.
///
/// One PostgreSQL reads it as any statement. A Citus coordinator cannot read, as the caller,
/// a diary's shard that the write's SECURITY DEFINER function changed as the schema's owner:
/// it keeps one connection a role to each node, and only the owner's sees those changes
/// before the COMMIT. So a read of the diary's shards goes through a router there
/// (`read_back_diary`, `read_back_entry`), which runs the same response function in the
/// owner's connection, where it takes the caller's role before it reads.
package struct ReadBack: Sendable {
    let single: PostgresQuery
    let citus: PostgresQuery

    /// A statement that reads only tables every node holds whole (reference tables such as
    /// `users`): Citus reads those on the coordinator, in the transaction's own backend, so it
    /// is the same statement on both.
    package static func statement(_ statement: PostgresQuery) -> ReadBack {
        ReadBack(single: statement, citus: statement)
    }

    /// The rows of a response function (`diary_response`, `entry_response`) of a diary's
    /// shards, given its arguments: called as the caller on one PostgreSQL, through `router`
    /// on Citus.
    static func response(_ function: StaticString, routedBy router: StaticString, _ arguments: PostgresQuery) -> ReadBack {
        ReadBack(
            single: "select * from \(unsafeRaw: "\(function)")(\(arguments))",
            citus: "select * from \(unsafeRaw: "\(router)")(\(arguments))")
    }

    func spelled(for database: RequestScope.Database) -> PostgresQuery {
        switch database {
        case .single: single
        case .citus: citus
        }
    }
}
