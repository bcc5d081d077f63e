// Made by `make refusals` (scripts/refusals.py) from refusals.tsv: change the table, not this file.

/// A problem's stable `code`, as the contract lists them (`Problem.code`), open: a code the
/// server adds later arrives as `.unknown` instead of failing to decode.
public enum ProblemCode: Sendable, Hashable, CustomStringConvertible {
    /// No valid session: sign in again.
    case unauthorized
    /// Nothing there, or nothing the caller may see: the two are never told apart.
    case notFound
    /// The caller sees the row but may not do this to it.
    case forbidden
    /// A field is invalid; the detail says which.
    case validationFailed
    /// A field that the server sets was sent.
    case readOnlyField
    /// The diary has as many members as its type allows.
    case diaryFull
    /// No diary has this invite code.
    case inviteCodeInvalid
    /// An entry with this id exists with other content: the client reused an id.
    case entryIDConflict
    /// Too many requests: wait for Retry-After.
    case rateLimited
    /// The server's database connections are all busy: retry.
    case poolExhausted
    /// The body is larger than the route accepts.
    case payloadTooLarge
    /// The server failed: retry later, and quote the request id if it lasts.
    case `internal`
    /// The database or the photo store cannot be reached: retry later.
    case serviceUnavailable
    /// The database took too long: retry.
    case timeout
    /// The write conflicts with what is there: an id taken by something else, or a restore of a diary that has members.
    case conflict
    /// A concurrent write won: retry.
    case conflictRetry
    /// The route does not accept this method.
    case methodNotAllowed
    /// The request is malformed.
    case badRequest
    /// A delta-sync cursor older than what is kept, or never issued: reload over REST, then follow.
    case resyncRequired
    /// The body's type is not accepted, or a photo's bytes are not what its Content-Type says.
    case unsupportedMediaType
    /// A photo whose header cannot be read, or whose sides are too long.
    case invalidImage
    /// A photo the caller uploaded is already attached to another entry.
    case photoInUse
    /// The caller's plan allows less; the detail says what to do.
    case premiumRequired
    /// A signed photo URL past its expiry: fetch the entry again for a fresh one.
    case urlExpired
    /// The server is at capacity: retry.
    case overloaded
    /// Under maintenance: reads work, writes wait.
    case maintenance
    /// This app version is below the service's minimum: the app must update.
    case upgradeRequired
    /// The access token has expired: refresh it and retry (DiaryKit does so itself).
    case tokenExpired
    /// The user is in as many diaries as one may be: leave one before joining or creating another.
    case tooManyDiaries
    /// A code this version of DiaryKit does not know.
    case unknown(String)

    static let known: [String: ProblemCode] = [
        "unauthorized": .unauthorized,
        "not_found": .notFound,
        "forbidden": .forbidden,
        "validation_failed": .validationFailed,
        "read_only_field": .readOnlyField,
        "diary_full": .diaryFull,
        "invite_code_invalid": .inviteCodeInvalid,
        "entry_id_conflict": .entryIDConflict,
        "rate_limited": .rateLimited,
        "pool_exhausted": .poolExhausted,
        "payload_too_large": .payloadTooLarge,
        "internal": .`internal`,
        "service_unavailable": .serviceUnavailable,
        "timeout": .timeout,
        "conflict": .conflict,
        "conflict_retry": .conflictRetry,
        "method_not_allowed": .methodNotAllowed,
        "bad_request": .badRequest,
        "resync_required": .resyncRequired,
        "unsupported_media_type": .unsupportedMediaType,
        "invalid_image": .invalidImage,
        "photo_in_use": .photoInUse,
        "premium_required": .premiumRequired,
        "url_expired": .urlExpired,
        "overloaded": .overloaded,
        "maintenance": .maintenance,
        "upgrade_required": .upgradeRequired,
        "token_expired": .tokenExpired,
        "too_many_diaries": .tooManyDiaries,
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

    /// A verdict on what was sent, which no retry changes: the offline queue drops a draft
    /// refused so, and keeps it for any other answer. A closed list: a code the server adds
    /// later keeps the draft.
    public var refusesTheDraft: Bool {
        switch self {
        case .notFound, .forbidden, .validationFailed, .readOnlyField, .entryIDConflict, .payloadTooLarge, .badRequest, .unsupportedMediaType, .invalidImage, .photoInUse, .premiumRequired: true
        default: false
        }
    }

    /// Whether the same request may succeed later without any change: the server was busy,
    /// slow or under maintenance, or the caller was rate limited.
    public var isTransient: Bool {
        switch self {
        case .rateLimited, .poolExhausted, .`internal`, .serviceUnavailable, .timeout, .conflictRetry, .overloaded, .maintenance: true
        default: false
        }
    }

    /// What an app may show for it, in Japanese and in English; nil for a code this version
    /// of DiaryKit does not know.
    public var message: (japanese: String, english: String)? {
        switch self {
        case .unauthorized: ("もう一度ログインしてください。", "Please sign in again.")
        case .notFound: ("見つかりませんでした。", "This couldn't be found.")
        case .forbidden: ("この操作はできません。", "You can't do that.")
        case .validationFailed: ("入力内容を確認してください。", "Please check what you entered.")
        case .readOnlyField: ("変更できない項目が含まれています。", "Something here can't be changed.")
        case .diaryFull: ("この日記はメンバーがいっぱいです。", "This diary is full.")
        case .inviteCodeInvalid: ("招待コードが正しくありません。", "That invite code isn't valid.")
        case .entryIDConflict: ("この日記は別の内容ですでに保存されています。", "This entry was already saved with other content.")
        case .rateLimited: ("しばらく待ってからもう一度お試しください。", "Please wait a moment and try again.")
        case .poolExhausted: ("混み合っています。少し待ってからお試しください。", "We're busy. Please try again shortly.")
        case .payloadTooLarge: ("データが大きすぎます。", "This is too large to send.")
        case .`internal`: ("エラーが発生しました。時間をおいてお試しください。", "Something went wrong. Please try again later.")
        case .serviceUnavailable: ("ただいま利用できません。時間をおいてお試しください。", "The service is unavailable. Please try again later.")
        case .timeout: ("時間がかかりすぎました。もう一度お試しください。", "This took too long. Please try again.")
        case .conflict: ("ほかの変更と重なりました。画面を更新してください。", "This conflicts with another change. Please refresh.")
        case .conflictRetry: ("ほかの変更と重なりました。もう一度お試しください。", "Another change got there first. Please try again.")
        case .methodNotAllowed: ("この操作には対応していません。", "This isn't supported.")
        case .badRequest: ("リクエストが正しくありません。", "Something was wrong with the request.")
        case .resyncRequired: ("最新の内容を読み込み直します。", "Reloading the latest.")
        case .unsupportedMediaType: ("この形式には対応していません。", "This format isn't supported.")
        case .invalidImage: ("画像を読み込めませんでした。", "This image couldn't be read.")
        case .photoInUse: ("この写真はほかの日記で使われています。", "This photo is already used in another entry.")
        case .premiumRequired: ("プレミアムプランが必要です。", "This needs Premium.")
        case .urlExpired: ("写真のリンクの期限が切れました。読み込み直します。", "The photo link expired. Reloading.")
        case .overloaded: ("混み合っています。少し待ってからお試しください。", "We're busy. Please try again shortly.")
        case .maintenance: ("メンテナンス中です。閲覧はできます。", "We're under maintenance. You can still read.")
        case .upgradeRequired: ("アプリを最新版にアップデートしてください。", "Please update the app.")
        case .tokenExpired: ("ログインの有効期限が切れました。もう一度お試しください。", "Your sign-in expired. Please try again.")
        case .tooManyDiaries: ("参加できる日記の数の上限です。どれかを退出してください。", "You're in as many diaries as you can be. Leave one first.")
        case .unknown: nil
        }
    }
}
