import DiaryCore
import Hummingbird
import PostgresClient

/// From errors to problem+json: the domain's refusals, whose code, status and title are the
/// one table's (`Refusal`, refusals.tsv); database errors by kind; Hummingbird's own errors;
/// and Apple's keys being out of reach. The app's own SQLSTATEs never get here: the data layer
/// turns them into `DomainError`s (`AppSQLState`).
enum ProblemMapping {
    /// A refusal's status and title are the table's; an unauthorized caller is told how to
    /// authenticate, and one that may pass later when to try again.
    static func problem(for error: DomainError) -> Problem {
        switch error.reason {
        case .unauthorized: Problem.unauthorized(error.detail)
        // What broke stays in the log: the client gets the request id.
        case .internal: Problem.internalError()
        default: Problem(error.reason, detail: error.detail, headers: error.retryAfterSeconds.map { [.retryAfter: String($0)] } ?? [:])
        }
    }

    static func problem(for error: PostgresError) -> Problem {
        switch error.kind {
        case .insufficientPrivilege:
            return Problem.forbidden("this change is not allowed for you")
        case .queryCanceled:
            return Problem(.timeout, detail: "the database took too long")
        case .poolExhausted:
            return Problem.serviceUnavailable("the server is busy", code: .poolExhausted)
        case .connectionFailure, .poolClosed:
            return Problem.serviceUnavailable("the database is unavailable")
        case .serializationFailure, .deadlock, .lockNotAvailable:
            return Problem.serviceUnavailable("a conflicting change is in progress; retry", code: .conflictRetry)
        case .checkViolation, .notNullViolation, .invalidInput:
            return Problem(.validationFailed, detail: "a value is outside what this field accepts" + (error.constraint.map { " (\($0))" } ?? ""))
        case .uniqueViolation, .foreignKeyViolation:
            return Problem(.conflict, detail: "this conflicts with existing data")
        default:
            return Problem.internalError()
        }
    }

    static func problem(for error: HTTPError) -> Problem {
        switch error.status {
        case .notFound: Problem.notFound(error.body ?? "no such route")
        case .contentTooLarge: Problem.payloadTooLarge()
        case .unauthorized: Problem.unauthorized(error.body ?? "authentication is required")
        case .methodNotAllowed: Problem(.methodNotAllowed, detail: "this route does not accept that method")
        case .badRequest: Problem(.validationFailed, detail: error.body ?? "the request is not valid")
        default: Problem.passingOn(error.status, detail: error.body ?? error.status.reasonPhrase)
        }
    }

    /// Apple's keys could not be had, so the sign-in cannot be judged: a 503, not a 401.
    static func problem(for error: AppleKeysUnavailable) -> Problem {
        Problem.serviceUnavailable("Apple's sign-in keys cannot be loaded right now", retryAfterSeconds: 5)
    }
}
