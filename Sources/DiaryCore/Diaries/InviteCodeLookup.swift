package import PostgresClient

/// Whether an invite code opens a diary today, for the invite page (`GET /i/<code>`), which
/// anyone may open: it answers yes or no and nothing of the diary, through
/// `invite_code_diary`, which the join uses too, so the page and the join never disagree.
package struct InviteCodeLookup: Sendable {
    let pool: PostgresPool

    package init(pool: PostgresPool) {
        self.pool = pool
    }

    /// The code as the database reads what people type (`normalize_invite_code`, which the
    /// join uses too: upper case, without hyphens or spaces, O read as 0, I and L as 1) if it
    /// is a diary's current code; else nil. Text longer than `maximumLength` is not looked up.
    package func currentCode(typed text: String) async throws -> String? {
        guard (1...Self.maximumLength).contains(text.utf8.count) else { return nil }
        return try await pool.query("""
            select typed.code from normalize_invite_code(\(text)) as typed(code) where invite_code_diary(typed.code) is not null
            """, placement: .sharedConnection).first?.decode("code", as: String.self)
    }

    /// Generated codes are ten characters; typed ones may carry hyphens and spaces, and
    /// anything much longer is not worth a query.
    package static let maximumLength = 32
}
