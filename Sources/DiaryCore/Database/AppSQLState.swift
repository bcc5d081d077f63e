package import PostgresClient

/// The refusals our own SQL functions raise, with SQLSTATEs of class ZN (refusals.tsv), leave
/// the data layer as `DomainError`s, their message the detail: each `raise` says, for the
/// client, what happened.
package enum AppSQLState {
    /// The refusal `error` is, if our SQL raised it.
    package static func domainError(_ error: PostgresError) -> DomainError? {
        guard let code = error.sqlState?.code, let refusal = Refusal(sqlState: code) else { return nil }
        return DomainError(refusal, error.message, sqlState: SQLState(code))
    }

    /// Runs `body`, turning an error raised with one of these codes into its `DomainError`.
    package static func translating<Result>(_ body: () async throws -> Result) async throws -> Result {
        do {
            return try await body()
        } catch let error as PostgresError {
            throw domainError(error) ?? error
        }
    }
}
