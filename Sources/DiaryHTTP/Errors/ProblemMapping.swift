import DiaryCore
import Hummingbird
import PostgresClient

/// The one table from errors to problem+json: the domain's refusals, database errors by
/// kind (each named SQLSTATE the client knows has one), Hummingbird's own errors, and Apple's keys being out of reach. The
/// app's own SQLSTATEs never get here: the data layer turns them into `DomainError`s
/// (`AppSQLState`).
enum ProblemMapping {
    static func problem(for error: DomainError) -> Problem {
        switch error.reason {
        case .notFound: Problem.notFound(error.detail)
        case .forbidden: Problem.forbidden(error.detail)
        case .unauthenticated: Problem.unauthorized(error.detail)
        case .inviteCodeInvalid: Problem(status: .notFound, code: .inviteCodeInvalid, detail: error.detail)
        case .diaryFull: Problem(status: .conflict, code: .diaryFull, detail: error.detail)
        case .entryIDConflict: Problem(status: .conflict, code: .entryIDConflict, detail: error.detail)
        case .idConflict: Problem(status: .conflict, code: .conflict, detail: error.detail)
        case .diaryOpen: Problem(status: .conflict, code: .conflict, detail: error.detail)
        case .resyncRequired: Problem(status: .gone, code: .resyncRequired, detail: error.detail)
        case .photoInUse: Problem(status: .conflict, code: .photoInUse, detail: error.detail)
        case .premiumRequired: Problem(status: .forbidden, code: .premiumRequired, detail: error.detail)
        case .rateLimited: Problem(status: .tooManyRequests, code: .rateLimited, detail: error.detail)
        case .unsupportedMediaType: Problem(status: .unsupportedMediaType, code: .unsupportedMediaType, detail: error.detail)
        case .invalidImage: Problem(status: .unprocessableContent, code: .invalidImage, detail: error.detail)
        case .urlExpired: Problem(status: .forbidden, code: .urlExpired, detail: error.detail)
        case .inconsistent: Problem.internalError()
        case .storeUnavailable: Problem.serviceUnavailable(error.detail, retryAfterSeconds: 5)
        case .tooManyDiaries: Problem(status: .conflict, code: .tooManyDiaries, detail: error.detail)
        }
    }

    static func problem(for error: PostgresError) -> Problem {
        switch error.kind {
        case .insufficientPrivilege:
            return Problem.forbidden("this change is not allowed for you")
        case .queryCanceled:
            return Problem(status: .gatewayTimeout, code: .timeout, detail: "the database took too long")
        case .poolExhausted:
            return Problem.serviceUnavailable("the server is busy", code: .poolExhausted)
        case .connectionFailure, .poolClosed:
            return Problem.serviceUnavailable("the database is unavailable")
        case .serializationFailure, .deadlock, .lockNotAvailable:
            return Problem.serviceUnavailable("a conflicting change is in progress; retry", code: .conflictRetry)
        case .checkViolation, .notNullViolation, .invalidInput:
            return Problem(status: .badRequest, code: .validationFailed, detail: "a value is outside what this field accepts" + (error.constraint.map { " (\($0))" } ?? ""))
        case .uniqueViolation, .foreignKeyViolation:
            return Problem(status: .conflict, code: .conflict, detail: "this conflicts with existing data")
        default:
            return Problem.internalError()
        }
    }

    static func problem(for error: HTTPError) -> Problem {
        switch error.status {
        case .notFound: Problem.notFound(error.body ?? "no such route")
        case .contentTooLarge: Problem.payloadTooLarge()
        case .unauthorized: Problem.unauthorized(error.body ?? "authentication is required")
        case .methodNotAllowed: Problem(status: .methodNotAllowed, code: .methodNotAllowed, detail: "this route does not accept that method")
        case .badRequest: Problem(status: .badRequest, code: .validationFailed, detail: error.body ?? "the request is not valid")
        default: Problem(status: error.status, code: error.status.code >= 500 ? .internal : .badRequest, detail: error.body ?? error.status.reasonPhrase)
        }
    }

    /// Apple's keys could not be had, so the sign-in cannot be judged: a 503, not a 401.
    static func problem(for error: AppleKeysUnavailable) -> Problem {
        Problem.serviceUnavailable("Apple's sign-in keys cannot be loaded right now", retryAfterSeconds: 5)
    }
}
