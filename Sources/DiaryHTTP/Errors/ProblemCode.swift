/// Every `code` a problem+json answer can carry: the contract's one list. openapi.yaml's
/// `Problem.code` enum and the README's list are held equal to it (`ProblemCodeTests`), so a
/// client generated with a strict enum decodes every answer.
enum ProblemCode: String, CaseIterable, Sendable {
    case unauthorized
    case notFound = "not_found"
    case forbidden
    case validationFailed = "validation_failed"
    case readOnlyField = "read_only_field"
    case diaryFull = "diary_full"
    case inviteCodeInvalid = "invite_code_invalid"
    case entryIDConflict = "entry_id_conflict"
    case rateLimited = "rate_limited"
    case poolExhausted = "pool_exhausted"
    case payloadTooLarge = "payload_too_large"
    case `internal`
    case serviceUnavailable = "service_unavailable"
    case timeout
    case conflict
    case conflictRetry = "conflict_retry"
    case methodNotAllowed = "method_not_allowed"
    case badRequest = "bad_request"
    case resyncRequired = "resync_required"
    case unsupportedMediaType = "unsupported_media_type"
    case invalidImage = "invalid_image"
    case photoInUse = "photo_in_use"
    case premiumRequired = "premium_required"
    case urlExpired = "url_expired"
    case overloaded
    case maintenance
    case upgradeRequired = "upgrade_required"
    case tokenExpired = "token_expired"
    case tooManyDiaries = "too_many_diaries"
}
