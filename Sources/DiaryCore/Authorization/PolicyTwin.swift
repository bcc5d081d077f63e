package import PostgresClient

/// The Swift twin of one row-level security policy (sql/definitions).
///
/// Statements splice the twin's USING in, so they reach the rows PostgreSQL's policy lets
/// the caller reach, and the planner can use the predicate as its access path.
/// `PolicyTwinTests` holds every twin in `all` to its policy as PostgreSQL itself deparses
/// both. A write that must tell "not there" (404) from "not allowed" (403) goes through a
/// SQL function that makes its policy's rule itself, whose answer `requireDone` reads.
package struct PolicyTwin: Sendable {
    /// How the policy in the schema spells the twin's USING.
    package enum Spelling: Sendable {
        /// USING as the twin spells it.
        case asWritten
        /// `(using) is true`. The same rows pass, but PostgreSQL checks it as a filter on
        /// the row it found instead of as an index key. The twin keeps the plain spelling,
        /// which statements may use as their access path.
        case isTrue
    }

    package let name: String
    package let table: PostgresFragment
    package let spelling: Spelling
    package let usingPredicate: PostgresFragment

    package init(_ name: String, on table: PostgresFragment, using: PostgresFragment, spelling: Spelling = .asWritten) {
        self.name = name
        self.table = table
        self.usingPredicate = using
        self.spelling = spelling
    }

    /// USING, for splicing into a statement (see `PolicyRule`).
    package var using: PostgresFragment {
        PolicyRule.rule(usingPredicate)
    }

    /// `select` or `delete`, from the name's last word as the schema spells every policy.
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

    /// Every twin, for `PolicyTwinTests`: each one a statement splices in.
    package static var all: [PolicyTwin] {
        [
            UsersPolicy.select,
            DiariesPolicy.select,
            DiaryMembersPolicy.select,
            EntriesPolicy.select,
            EntryReadsPolicy.select,
            EntryPhotosPolicy.select,
            DevicesPolicy.select, DevicesPolicy.delete,
        ]
    }

    /// Reads the answer of a function that writes and makes its policy's rule itself
    /// (`edit_entry`, `delete_entry`, `rename_diary`, `rotate_invite_code`,
    /// `remove_diary_member`) in the column `outcome`: `not_found` (or no answer) is
    /// `missing` (404), `forbidden` is `forbidden` (403). A function tells the two apart
    /// because PostgreSQL's own policies would hide the one and silently skip the other.
    package static func requireDone(_ rows: PostgresRows, missing: String, forbidden: String) throws {
        switch try rows.first?.decode("outcome", as: String?.self) {
        case "forbidden": throw DomainError.forbidden(forbidden)
        case "not_found", nil: throw DomainError.notFound(missing)
        default: return
        }
    }
}
