package import PostgresClient

/// What the domain refuses: one of the refusals of the one table (`Refusal`, made from
/// refusals.tsv), with a sentence for this time.
package struct DomainError: Error, Sendable, CustomStringConvertible {
    package var reason: Refusal
    /// A sentence for the client; it never holds SQL or bound values.
    package var detail: String
    /// The SQLSTATE, when the database raised the refusal.
    package var sqlState: SQLState?
    /// When to try again, for a refusal that may pass later.
    package var retryAfterSeconds: Int?

    package init(_ reason: Refusal, _ detail: String, sqlState: SQLState? = nil, retryAfterSeconds: Int? = nil) {
        self.reason = reason
        self.detail = detail
        self.sqlState = sqlState
        self.retryAfterSeconds = retryAfterSeconds
    }

    package static func notFound(_ detail: String) -> DomainError { DomainError(.notFound, detail) }
    package static func forbidden(_ detail: String) -> DomainError { DomainError(.forbidden, detail) }
    package static func unauthenticated(_ detail: String) -> DomainError { DomainError(.unauthorized, detail) }
    package static func inconsistent(_ detail: String) -> DomainError { DomainError(.internal, detail) }

    package var description: String {
        "DomainError(\(reason)\(sqlState.map { ", sqlState: \($0)" } ?? ""))"
    }
}
