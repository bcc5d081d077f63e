import Foundation
package import PostgresClient

/// The identity functions called where they are used, for a Citus cluster: the schema's
/// policies and the request statements select them once a statement, `(select
/// app_user_id())`, which one PostgreSQL evaluates once. Citus plans such a subquery
/// without FROM on its own, sends its result to every node, and then runs the statement on
/// every shard instead of the diary's one (a timeline page went from 32 tasks and 0.4 s to
/// one shard). The functions are STABLE and inline to a setting's read, so the statement
/// passes the same rows.
package enum CitusSpelling {
    static let functions = ["app_user_id", "app_diary_ids", "app_visible_user_ids"]

    /// `sql` with each `(select f())` as `f()`, and the catalog's own spelling of a
    /// policy, `( SELECT f() AS f)`, the same way.
    package static func respelled(_ sql: String) -> String {
        var text = sql
        for function in functions {
            text = text.replacingOccurrences(of: "(select \(function)())", with: "\(function)()")
            // pg_policies qualifies the name unless public is on the search path.
            for spelling in ["public.\(function)", function] {
                text = text.replacingOccurrences(of: "( SELECT \(spelling)() AS \(function))", with: "public.\(function)()")
            }
        }
        return text
    }

    package static func respelled(_ query: PostgresQuery) -> PostgresQuery {
        PostgresQuery(unsafeSQL: respelled(query.sql), bindings: query.bindings)
    }
}
