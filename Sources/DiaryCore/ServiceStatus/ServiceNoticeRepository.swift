package import DiaryModels
package import Foundation
package import PostgresClient

/// The service's notices: read by anyone (`GET /v1/service-status`), written only by the
/// operator's `diary-server notice` through the schema owner's connection.
package struct ServiceNoticeRepository: Sendable {
    let pool: PostgresPool

    package init(pool: PostgresPool) {
        self.pool = pool
    }

    /// The days a shutdown is announced ahead, at least: six months, as the app promises.
    package static let shutdownNoticeDays = 183
    /// What the status endpoint lists, newest first.
    package static let listed = 20

    package func list(limit: Int = ServiceNoticeRepository.listed) async throws -> [ServiceNotice] {
        let rows = try await pool.query("""
            select id, kind, title, body, published_at, to_char(effective_on, 'YYYY-MM-DD') as effective_on
            from service_notices order by published_at desc, id limit \(limit)
            """, placement: .sharedConnection)
        return try rows.map { row in
            ServiceNotice(
                id: try row.decode("id"), kind: ServiceNoticeKind(rawValue: try row.decode("kind")) ?? .info,
                title: try row.decode("title"), body: try row.decode("body"),
                publishedAt: try row.decode("published_at"), effectiveOn: try row.decode("effective_on"))
        }
    }

    package enum AddOutcome: Sendable, Equatable {
        case added(UUID)
        /// A shutdown whose date is less than `shutdownNoticeDays` ahead, or missing.
        case tooSoon(earliest: String)
    }

    /// `effectiveOn` is YYYY-MM-DD. The schema holds the 183-day rule as well; this says why.
    package func add(kind: ServiceNoticeKind, title: String, body: String, effectiveOn: String?) async throws -> AddOutcome {
        let rows = try await pool.query("""
            select to_char((now() at time zone 'UTC')::date + \(Self.shutdownNoticeDays)::integer, 'YYYY-MM-DD') as earliest,
                \(effectiveOn)::date >= (now() at time zone 'UTC')::date + \(Self.shutdownNoticeDays)::integer as far_enough
            """)
        let earliest: String = try rows.first?.decode("earliest") ?? "?"
        if kind == .shutdown, try rows.first?.decode("far_enough", as: Bool?.self) != true {
            return .tooSoon(earliest: earliest)
        }
        let inserted = try await pool.query("""
            insert into service_notices (kind, title, body, effective_on)
            values (\(kind.rawValue), \(title), \(body), \(effectiveOn)::date) returning id
            """)
        return .added(try inserted.first!.decode("id"))
    }

    /// Whether a notice was removed.
    package func remove(_ id: UUID) async throws -> Bool {
        try await !pool.query("delete from service_notices where id = \(id) returning id").isEmpty
    }
}
