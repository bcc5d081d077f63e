/// A problem's stable `code`, as the contract lists them (`Problem.code`), open: a code the
/// server adds later arrives as `.unknown` instead of failing to decode.
public enum ProblemCode: Sendable, Hashable, CustomStringConvertible {
    /// No valid session; sign in again.
    case unauthorized
    /// The access token has expired; DiaryKit refreshes it and retries on its own.
    case tokenExpired
    /// Nothing there, or nothing the caller may see.
    case notFound
    /// The caller may not do this.
    case forbidden
    /// A field is invalid; `Problem.detail` says which.
    case validationFailed
    /// A field that cannot be written was sent.
    case readOnlyField
    /// The diary has as many members as it may.
    case diaryFull
    /// No diary has this invite code.
    case inviteCodeInvalid
    /// An entry with this id exists with other content: the client id was reused.
    case entryIDConflict
    /// Too many requests; wait `Problem.retryAfter`.
    case rateLimited
    /// The server's database connections are all busy; retry.
    case poolExhausted
    /// The request body is too large.
    case payloadTooLarge
    /// The server failed; retry later.
    case `internal`
    /// The service is unavailable; retry later.
    case serviceUnavailable
    /// The database took too long; retry.
    case timeout
    /// The write conflicts with the current state.
    case conflict
    /// A concurrent write won; retry.
    case conflictRetry
    /// The method is not allowed on this path.
    case methodNotAllowed
    /// The request is malformed.
    case badRequest
    /// A delta sync cursor is too old or unknown: reload over REST.
    case resyncRequired
    /// The body's content type is not accepted.
    case unsupportedMediaType
    /// The uploaded bytes are not an image the server takes.
    case invalidImage
    /// The photo is attached to another entry.
    case photoInUse
    /// The free plan does not allow this.
    case premiumRequired
    /// A signed photo URL has expired; fetch the entry again for a fresh one.
    case urlExpired
    /// The server is at capacity; retry.
    case overloaded
    /// The service is under maintenance: reads work, writes wait.
    case maintenance
    /// This app version is below the service's minimum: the app must update.
    case upgradeRequired
    /// The user is in as many diaries as one may be: leave one before joining or creating another.
    case tooManyDiaries
    /// A code this version of DiaryKit does not know.
    case unknown(String)

    static let known: [String: ProblemCode] = [
        "unauthorized": .unauthorized, "token_expired": .tokenExpired, "not_found": .notFound,
        "forbidden": .forbidden, "validation_failed": .validationFailed, "read_only_field": .readOnlyField,
        "diary_full": .diaryFull, "invite_code_invalid": .inviteCodeInvalid, "entry_id_conflict": .entryIDConflict,
        "rate_limited": .rateLimited, "pool_exhausted": .poolExhausted, "payload_too_large": .payloadTooLarge,
        "internal": .internal, "service_unavailable": .serviceUnavailable, "timeout": .timeout,
        "conflict": .conflict, "conflict_retry": .conflictRetry, "method_not_allowed": .methodNotAllowed,
        "bad_request": .badRequest, "resync_required": .resyncRequired, "unsupported_media_type": .unsupportedMediaType,
        "invalid_image": .invalidImage, "photo_in_use": .photoInUse, "premium_required": .premiumRequired,
        "url_expired": .urlExpired, "overloaded": .overloaded, "maintenance": .maintenance,
        "upgrade_required": .upgradeRequired, "too_many_diaries": .tooManyDiaries,
    ]

    /// The code for the text the server sent.
    public init(rawValue: String) {
        self = Self.known[rawValue] ?? .unknown(rawValue)
    }

    /// The text the server sends.
    public var rawValue: String {
        if case .unknown(let text) = self { return text }
        return Self.known.first { $0.value == self }!.key
    }

    /// The code as the server writes it.
    public var description: String { rawValue }

    /// Whether the same request may succeed later without any change: the server was busy,
    /// slow or under maintenance, or the caller was rate limited.
    /// A verdict on what was sent, which no retry changes: the offline queue drops a draft
    /// refused so, and keeps it for any other answer. A closed list: a code the server adds
    /// later keeps the draft.
    public var refusesTheDraft: Bool {
        switch self {
        case .validationFailed, .readOnlyField, .forbidden, .notFound, .entryIDConflict, .premiumRequired,
             .payloadTooLarge, .photoInUse, .invalidImage, .badRequest, .unsupportedMediaType:
            return true
        default:
            return false
        }
    }

    public var isTransient: Bool {
        switch self {
        case .rateLimited, .poolExhausted, .internal, .serviceUnavailable, .timeout, .conflictRetry, .overloaded, .maintenance:
            true
        default:
            false
        }
    }
}
