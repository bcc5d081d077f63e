// Made by `make refusals` (scripts/refusals.py) from refusals.tsv: change the table, not this file.

/// Every refusal a client may meet: its code, the HTTP status it answers with, its title, and
/// the SQLSTATE our SQL raises it with, if it does. A new refusal is one `raise` in SQL and one
/// row of refusals.tsv.
package enum Refusal: String, CaseIterable, Sendable {
    /// No valid session: sign in again.
    case unauthorized
    /// Nothing there, or nothing the caller may see: the two are never told apart.
    case notFound = "not_found"
    /// The caller sees the row but may not do this to it.
    case forbidden
    /// A field is invalid; the detail says which.
    case validationFailed = "validation_failed"
    /// A field that the server sets was sent.
    case readOnlyField = "read_only_field"
    /// The diary has as many members as its type allows.
    case diaryFull = "diary_full"
    /// No diary has this invite code.
    case inviteCodeInvalid = "invite_code_invalid"
    /// An entry with this id exists with other content: the client reused an id.
    case entryIDConflict = "entry_id_conflict"
    /// Too many requests: wait for Retry-After.
    case rateLimited = "rate_limited"
    /// The server's database connections are all busy: retry.
    case poolExhausted = "pool_exhausted"
    /// The body is larger than the route accepts.
    case payloadTooLarge = "payload_too_large"
    /// The server failed: retry later, and quote the request id if it lasts.
    case `internal`
    /// The database or the photo store cannot be reached: retry later.
    case serviceUnavailable = "service_unavailable"
    /// The database took too long: retry.
    case timeout
    /// The write conflicts with what is there: an id taken by something else, or a restore of a diary that has members.
    case conflict
    /// A concurrent write won: retry.
    case conflictRetry = "conflict_retry"
    /// The route does not accept this method.
    case methodNotAllowed = "method_not_allowed"
    /// The request is malformed.
    case badRequest = "bad_request"
    /// A delta-sync cursor older than what is kept, or never issued: reload over REST, then follow.
    case resyncRequired = "resync_required"
    /// The body's type is not accepted, or a photo's bytes are not what its Content-Type says.
    case unsupportedMediaType = "unsupported_media_type"
    /// A photo whose header cannot be read, or whose sides are too long.
    case invalidImage = "invalid_image"
    /// A photo the caller uploaded is already attached to another entry.
    case photoInUse = "photo_in_use"
    /// The caller's plan allows less; the detail says what to do.
    case premiumRequired = "premium_required"
    /// A signed photo URL past its expiry: fetch the entry again for a fresh one.
    case urlExpired = "url_expired"
    /// The server is at capacity: retry.
    case overloaded
    /// Under maintenance: reads work, writes wait.
    case maintenance
    /// This app version is below the service's minimum: the app must update.
    case upgradeRequired = "upgrade_required"
    /// The access token has expired: refresh it and retry (DiaryKit does so itself).
    case tokenExpired = "token_expired"
    /// The user is in as many diaries as one may be: leave one before joining or creating another.
    case tooManyDiaries = "too_many_diaries"

    /// The HTTP status it answers with.
    package var status: Int {
        switch self {
        case .unauthorized: 401
        case .notFound: 404
        case .forbidden: 403
        case .validationFailed: 400
        case .readOnlyField: 400
        case .diaryFull: 409
        case .inviteCodeInvalid: 404
        case .entryIDConflict: 409
        case .rateLimited: 429
        case .poolExhausted: 503
        case .payloadTooLarge: 413
        case .`internal`: 500
        case .serviceUnavailable: 503
        case .timeout: 504
        case .conflict: 409
        case .conflictRetry: 503
        case .methodNotAllowed: 405
        case .badRequest: 400
        case .resyncRequired: 410
        case .unsupportedMediaType: 415
        case .invalidImage: 422
        case .photoInUse: 409
        case .premiumRequired: 403
        case .urlExpired: 403
        case .overloaded: 503
        case .maintenance: 503
        case .upgradeRequired: 426
        case .tokenExpired: 401
        case .tooManyDiaries: 409
        }
    }

    /// The problem's `title`: a short summary of the kind of problem.
    package var title: String {
        switch self {
        case .unauthorized: "Unauthorized"
        case .notFound: "Not found"
        case .forbidden: "Forbidden"
        case .validationFailed: "Validation failed"
        case .readOnlyField: "Read-only field"
        case .diaryFull: "Diary full"
        case .inviteCodeInvalid: "Invite code invalid"
        case .entryIDConflict: "Entry id conflict"
        case .rateLimited: "Too many requests"
        case .poolExhausted: "Server busy"
        case .payloadTooLarge: "Payload too large"
        case .`internal`: "Internal error"
        case .serviceUnavailable: "Service unavailable"
        case .timeout: "Timeout"
        case .conflict: "Conflict"
        case .conflictRetry: "Conflict, retry"
        case .methodNotAllowed: "Method not allowed"
        case .badRequest: "Bad request"
        case .resyncRequired: "Resync required"
        case .unsupportedMediaType: "Unsupported media type"
        case .invalidImage: "Invalid image"
        case .photoInUse: "Photo in use"
        case .premiumRequired: "Premium required"
        case .urlExpired: "URL expired"
        case .overloaded: "Overloaded"
        case .maintenance: "Maintenance"
        case .upgradeRequired: "Upgrade required"
        case .tokenExpired: "Token expired"
        case .tooManyDiaries: "Too many diaries"
        }
    }

    /// The refusal our SQL raises with `sqlState` (class ZN); nil for any other.
    package init?(sqlState: String) {
        switch sqlState {
        case "ZN401": self = .unauthorized
        case "ZN003", "ZN004": self = .notFound
        case "ZN002": self = .diaryFull
        case "ZN001": self = .inviteCodeInvalid
        case "ZN005": self = .photoInUse
        case "ZN006": self = .premiumRequired
        case "ZN007": self = .tooManyDiaries
        default: return nil
        }
    }

    /// Every SQLSTATE our SQL raises.
    package static let sqlStates: [String] = ["ZN401", "ZN003", "ZN004", "ZN002", "ZN001", "ZN005", "ZN006", "ZN007"]
}
