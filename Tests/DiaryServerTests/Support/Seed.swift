import DiaryModels
import Foundation
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP
@testable import DiaryServer

/// Users, diaries and members made straight in SQL, for tests below the HTTP layer.
enum Seed {
    static func users(_ count: Int, in pool: PostgresPool) async throws -> [UUID] {
        try await pool.query("select add_user(null, 'user ' || g) as id from generate_series(1, \(count)) g")
            .map { try $0.decode("id", as: UUID.self) }
    }

    /// A diary with `owner` as its owner; returns its id and invite code.
    static func diary(type: String, owner: UUID, in pool: PostgresPool) async throws -> (id: UUID, inviteCode: String) {
        let id = UUID()
        let results = try await pool.transaction([
            "select create_diary_as(\(owner), \(id), \("test diary"), \(type))",
            "select id, invite_code from diaries where id = \(id)",
        ])
        let row = try #require(results[1].first)
        return (try row.decode("id", as: UUID.self), try row.decode("invite_code", as: String.self))
    }

    /// Makes `user` the transaction's caller (app.user_id), as authenticate() does, without a session.
    static func identity(_ user: UUID) -> PostgresQuery {
        "select set_config('app.user_id', \(user)::text, true)"
    }

    /// `statement` in a transaction whose caller is `user`.
    static func asCaller(_ user: UUID, _ statement: PostgresQuery, in pool: PostgresPool) async throws -> PostgresRows {
        try await pool.transaction([identity(user), statement])[1]
    }

    static func memberCount(_ diary: UUID, in pool: PostgresPool) async throws -> Int {
        let row = try #require(try await pool.query("select count(*)::int8 as n from diary_members where diary_id = \(diary)").first)
        return try row.decode("n", as: Int.self)
    }
}
