/// How long each text the API takes may be, counted as a person counts: user-perceived
/// characters (extended grapheme clusters, as Swift's `String.count` on the phone), so
/// "👨‍👩‍👧" is one and "é" is one however it is encoded. Each limit is written here alone: the
/// routes check it through `Validation.text`, and `TextLimitTests` holds the database's
/// backstop CHECKs and openapi.yaml's lengths to it, so a copy that drifts fails a test.
package enum TextLimit: CaseIterable, Sendable {
    /// A diary's name.
    case diaryName
    /// A user's display name; a development sign-in's name is one too, as it becomes the display name.
    case displayName
    /// An entry's text.
    case entryContent
    /// The question an entry answers.
    case entryQuestion
    /// An invite code as a person types it, hyphens and spaces included (the database
    /// normalizes it, `normalize_invite_code`, before it looks the ten characters up), or the
    /// diary's invite link, `<PUBLIC_URL>/i/<code>`.
    case inviteCode
    /// Apple's identity token, refused at the size `TokenService` refuses any token at.
    case identityToken
    /// The raw nonce whose hash the identity token carries.
    case nonce
    /// Apple's authorization code: the codes are short, and anything longer is not one.
    case authorizationCode

    /// A CHECK cannot count grapheme clusters, so the database's backstop allows this many code
    /// points for each character of a limit (sql/migrations/0014_user_perceived_lengths.sql).
    package static let codePointsPerCharacter = 10

    /// The characters a value may have, after surrounding white space is trimmed.
    package var characters: ClosedRange<Int> {
        switch self {
        case .diaryName: 1...50
        case .displayName: 1...50
        case .entryContent: 1...10_000
        case .entryQuestion: 1...500
        case .inviteCode: 1...512
        case .identityToken: 1...TokenService.maximumTokenLength
        case .nonce: 1...256
        case .authorizationCode: 1...1024
        }
    }

    /// The most code points a value may have: the database's backstop, checked first by the
    /// server so that a value past it is a 400 and not a failed CHECK.
    package var maximumCodePoints: Int { characters.upperBound * Self.codePointsPerCharacter }
}
