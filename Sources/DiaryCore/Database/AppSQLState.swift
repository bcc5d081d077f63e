package import PostgresClient

/// The SQLSTATEs that our own SQL functions raise, all in class ZN (sql/schema.sql).
/// Each is a domain refusal, so it leaves the data layer as a `DomainError`.
package enum AppSQLState: String, Sendable {
    /// `join_diary`: no diary has the code.
    case inviteCodeInvalid = "ZN001"
    /// `join_diary`: the diary's type allows no more members.
    case diaryFull = "ZN002"
    /// `mark_as_read`: the entry is not in one of the caller's diaries.
    case entryNotFound = "ZN003"
    /// `set_entry_photos`: a photo that is not the caller's upload.
    case photoNotFound = "ZN004"
    /// `set_entry_photos`: a photo of the caller's on another entry.
    case photoInUse = "ZN005"
    /// `set_entry_photos`, `create_diary`: more than the caller's plan allows.
    case premiumRequired = "ZN006"
    /// `add_diary_member`: the user is in as many diaries as one may be (`diaries_per_user_cap`).
    case tooManyDiaries = "ZN007"
    /// `authenticate` and the functions that need a caller: the session is not live.
    case sessionInvalid = "ZN401"

    package var sqlState: SQLState { SQLState(rawValue) }

    package init?(_ error: PostgresError) {
        guard let code = error.sqlState?.code, let state = AppSQLState(rawValue: code) else { return nil }
        self = state
    }

    /// The refusal, in the client's words; `message` is what our function raised with.
    package func domainError(message: String) -> DomainError {
        switch self {
        case .inviteCodeInvalid: DomainError(.inviteCodeInvalid, "no diary has this invite code", sqlState: sqlState)
        case .diaryFull: DomainError(.diaryFull, "this diary has no room for another member", sqlState: sqlState)
        case .entryNotFound: DomainError(.notFound, "no such resource", sqlState: sqlState)
        case .photoNotFound: DomainError(.notFound, "no such photo", sqlState: sqlState)
        case .photoInUse: DomainError(.photoInUse, "a photo is already attached to another entry", sqlState: sqlState)
        // The function names the plan's limit that was reached.
        case .premiumRequired: DomainError(.premiumRequired, "this needs premium: \(message)", sqlState: sqlState)
        case .tooManyDiaries: DomainError(.tooManyDiaries, "\(message): leave one before joining or creating another", sqlState: sqlState)
        case .sessionInvalid: DomainError(.unauthenticated, "the session has ended; sign in again", sqlState: sqlState)
        }
    }

    /// Runs `body`, turning an error raised with one of these codes into its `DomainError`.
    package static func translating<Result>(_ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch let error as PostgresError {
            throw AppSQLState(error)?.domainError(message: error.message) ?? error
        }
    }
}
