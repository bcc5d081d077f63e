import Hummingbird
import PostgresClient

/// The one table from database errors to HTTP. Our own functions raise codes in class ZN.
enum DatabaseErrorMapping {
    static func problem(for error: PostgresError) -> Problem {
        switch error.sqlState?.code {
        case "ZN001": return Problem(status: .notFound, code: "invite_code_invalid", detail: "no diary has this invite code")
        case "ZN002": return Problem(status: .conflict, code: "diary_full", detail: "this diary has no room for another member")
        case "ZN003", "ZN404": return Problem.notFound()
        case "ZN401": return Problem.unauthorized("the session has ended; sign in again")
        case "ZN403", "42501": return Problem.forbidden("this change is not allowed for you")
        case "57014": return Problem(status: .gatewayTimeout, code: "timeout", detail: "the database took too long")
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
