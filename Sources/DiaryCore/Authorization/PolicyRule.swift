package import PostgresClient

/// A twin's predicate, spliced into the statements that need it.
///
/// Debug builds can turn every rule into `true` for one request's task, so a test can
/// show that PostgreSQL's own policies still refuse what Swift would have: the second
/// wall. Release builds have no such switch.
package enum PolicyRule {
    #if DEBUG
    @TaskLocal package static var swiftChecksDisabled = false
    #endif

    package static func rule(_ predicate: PostgresFragment) -> PostgresFragment {
        #if DEBUG
        if swiftChecksDisabled { return "true" }
        #endif
        return predicate
    }

    /// A rule about a value the statement already knows, such as the request's diary.
    package static func rule(_ predicate: PostgresQuery) -> PostgresQuery {
        #if DEBUG
        if swiftChecksDisabled { return "true" }
        #endif
        return predicate
    }
}
