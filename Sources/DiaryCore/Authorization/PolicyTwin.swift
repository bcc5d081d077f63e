package import PostgresClient

/// The Swift twin of one row-level security policy (sql/schema.sql).
///
/// Statements splice the twin's predicates in, so the server refuses what PostgreSQL's
/// policy would, and can tell a row the caller cannot see (404) from one they see but may
/// not change (403). `PolicyTwinTests` holds every twin in `all` to its policy as
/// PostgreSQL itself deparses both.
package struct PolicyTwin: Sendable {
    /// How the policy in the schema spells the twin's predicates.
    package enum Spelling: Sendable {
        /// USING is `using`, WITH CHECK is `check`.
        case asWritten
        /// USING is `(using) is true`. The same rows pass, but PostgreSQL checks it as a
        /// filter on the row it found instead of as an index key. The twin keeps the plain
        /// spelling, which statements may use as their access path.
        case isTrue
        /// A DELETE policy has no WITH CHECK, so its USING is `using and check`. The twin
        /// keeps the halves apart: a row the caller sees but may not delete is a 403.
        case usingAndCheck
    }

    package let name: String
    package let table: PostgresFragment
    /// The columns that name one row, diary_id first where the table has it.
    package let key: [PostgresFragment]
    package let spelling: Spelling
    package let usingPredicate: PostgresFragment?
    package let checkPredicate: PostgresFragment?

    package init(
        _ name: String, on table: PostgresFragment, key: [PostgresFragment], using: PostgresFragment? = nil, check: PostgresFragment? = nil,
        spelling: Spelling = .asWritten
    ) {
        self.name = name
        self.table = table
        self.key = key
        self.usingPredicate = using
        self.checkPredicate = check
        self.spelling = spelling
    }

    /// USING, for splicing into a statement (see `PolicyRule`).
    package var using: PostgresFragment {
        guard let usingPredicate else { preconditionFailure("policy \(name) has no USING") }
        return PolicyRule.rule(usingPredicate)
    }

    /// WITH CHECK (for a DELETE policy, the half of USING that only the permitted pass).
    package var check: PostgresFragment {
        guard let checkPredicate else { preconditionFailure("policy \(name) has no WITH CHECK") }
        return PolicyRule.rule(checkPredicate)
    }

    /// `select`, `insert`, `update` or `delete`, from the name's last word as the schema spells every policy.
    package var command: String {
        String(name[name.index(after: name.lastIndex(of: "_") ?? name.startIndex)...])
    }

    /// Follows a diary id: the membership test that most policies make.
    package static let isCallersDiary: PostgresFragment = " = any ((select app_diary_ids())::uuid[])"

    /// `(predicate) is true`: the one spelling of the respelling that `Spelling.isTrue`
    /// describes, for the twins whose statements filter with it too.
    package static func isTrue(_ predicate: PostgresFragment) -> PostgresFragment {
        "(" + predicate + ") is true"
    }

    /// Every twin, for `PolicyTwinTests`.
    package static var all: [PolicyTwin] {
        [
            UsersPolicy.select, UsersPolicy.update,
            DiariesPolicy.select, DiariesPolicy.update,
            DiaryMembersPolicy.select,
            EntriesPolicy.select, EntriesPolicy.update, EntriesPolicy.delete,
            EntryReadsPolicy.select,
            EntryPhotosPolicy.select,
            DevicesPolicy.select, DevicesPolicy.delete,
        ]
    }
}
