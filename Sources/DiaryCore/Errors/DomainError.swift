package import PostgresClient

/// What the domain refuses, in its own words. The HTTP layer's one table
/// (`ProblemMapping`) turns each reason into a status and a stable problem code.
package struct DomainError: Error, Sendable, CustomStringConvertible {
    package enum Reason: Sendable, Equatable {
        /// The row does not exist or the caller may not see it; the two are never told apart.
        case notFound
        /// The caller sees the row but may not do this to it.
        case forbidden
        /// The caller's account or session is gone.
        case unauthenticated
        case inviteCodeInvalid
        case diaryFull
        /// An entry id the client chose is taken by other content.
        case entryIDConflict
        /// An id the client chose is taken by something other than what it asks for.
        case idConflict
        /// A change-log cursor older than what is kept, or never issued: reload, then follow.
        case resyncRequired
        /// A photo the caller uploaded is already attached to another entry.
        case photoInUse
        /// The caller's plan allows less (more photos an entry than the free plan's one).
        case premiumRequired
        /// The caller has done this too often today.
        case rateLimited
        /// A photo's bytes are not what its Content-Type says, or not a type we keep.
        case unsupportedMediaType
        /// A photo whose header cannot be read, or whose sides are too long.
        case invalidImage
        /// A signed URL past its expiry.
        case urlExpired
        /// A state the schema rules out was found anyway.
        case inconsistent
        /// The photo store did not answer or refused (`PhotoStoreError.unavailable`): try later.
        case storeUnavailable
        /// The user is in as many diaries as one may be: each is a position in their cursor.
        case tooManyDiaries
        /// A restore of a diary that still has members: join it with its invite code instead.
        case diaryOpen
    }

    package var reason: Reason
    /// A sentence for the client; it never holds SQL or bound values.
    package var detail: String
    /// The SQLSTATE, when the database raised the refusal.
    package var sqlState: SQLState?

    package init(_ reason: Reason, _ detail: String, sqlState: SQLState? = nil) {
        self.reason = reason
        self.detail = detail
        self.sqlState = sqlState
    }

    package static func notFound(_ detail: String) -> DomainError { DomainError(.notFound, detail) }
    package static func forbidden(_ detail: String) -> DomainError { DomainError(.forbidden, detail) }
    package static func unauthenticated(_ detail: String) -> DomainError { DomainError(.unauthenticated, detail) }
    package static func inconsistent(_ detail: String) -> DomainError { DomainError(.inconsistent, detail) }

    package var description: String {
        "DomainError(\(reason)\(sqlState.map { ", sqlState: \($0)" } ?? ""))"
    }
}
