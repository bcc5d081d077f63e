package import PostgresClient

/// Whether an invite code opens a diary today, for the invite page (`GET /i/<code>`), which
/// anyone may open: it answers yes or no and nothing of the diary, through
/// `invite_code_diary`, which the join uses too, so the page and the join never disagree.
package struct InviteCodeLookup: Sendable {
    let pool: PostgresPool

    package init(pool: PostgresPool) {
        self.pool = pool
    }

    /// The code as people type it, made comparable as the database makes it
    /// (`normalize_invite_code`): upper case, without hyphens or spaces, O read as 0 and I
    /// and L as 1. Nil for text that cannot be a code: any other character, or too long.
    package static func normalized(_ text: String) -> String? {
        var code = ""
        for character in text.uppercased() where character != "-" && !character.isWhitespace {
            guard character.isASCII else { return nil }
            switch character {
            case "O": code.append("0")
            case "I", "L": code.append("1")
            case "0"..."9", "A"..."Z": code.append(character)
            default: return nil
            }
        }
        return (1...maximumLength).contains(code.count) ? code : nil
    }

    /// Generated codes are ten characters; anything much longer is not worth a query.
    package static let maximumLength = 32

    /// Whether `code` (normalized) is a diary's current code.
    package func isCurrent(_ code: String) async throws -> Bool {
        try await pool.query("select invite_code_diary(\(code)) is not null as current", placement: .sharedConnection)
            .first?.decode("current", as: Bool.self) ?? false
    }
}
