import DiaryCore
import Hummingbird
import PostgresClient

/// The one table from errors below HTTP to problem+json: the domain's refusals, then
/// database errors by SQLSTATE and kind. The app's own SQLSTATEs never get here: the
/// data layer turns them into `DomainError`s (`AppSQLState`).
enum ProblemMapping {
    static func problem(for error: DomainError) -> Problem {
        switch error.reason {
        case .notFound: Problem.notFound(error.detail)
        case .forbidden: Problem.forbidden(error.detail)
        case .unauthenticated: Problem.unauthorized(error.detail)
        case .inviteCodeInvalid: Problem(status: .notFound, code: "invite_code_invalid", detail: error.detail)
        case .diaryFull: Problem(status: .conflict, code: "diary_full", detail: error.detail)
        case .entryIDConflict: Problem(status: .conflict, code: "entry_id_conflict", detail: error.detail)
        case .inconsistent: Problem.internalError()
        }
    }

    static func problem(for error: PostgresError) -> Problem {
        switch error.sqlState {
        case SQLState.insufficientPrivilege: return Problem.forbidden("this change is not allowed for you")
        case SQLState.queryCanceled: return Problem(status: .gatewayTimeout, code: "timeout", detail: "the database took too long")
        default: break
        }
        switch error.kind {
        case .poolExhausted:
            return Problem.serviceUnavailable("the server is busy", code: "pool_exhausted")
        case .connectionFailure, .poolClosed:
            return Problem.serviceUnavailable("the database is unavailable")
        case .serializationFailure, .deadlock, .lockNotAvailable:
            return Problem.serviceUnavailable("a conflicting change is in progress; retry", code: "conflict_retry")
        case .checkViolation, .notNullViolation, .invalidInput:
            return Problem(status: .badRequest, code: "validation_failed", detail: "a value is outside what this field accepts" + (error.constraint.map { " (\($0))" } ?? ""))
        case .uniqueViolation, .foreignKeyViolation:
            return Problem(status: .conflict, code: "conflict", detail: "this conflicts with existing data")
        default:
            return Problem.internalError()
        }
    }
}
