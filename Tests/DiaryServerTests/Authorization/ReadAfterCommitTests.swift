import Crypto
import Foundation
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP

/// On a Citus coordinator a write's read-back runs after the write's COMMIT
/// (`RequestScope.Database.citus`), so its failure would answer an error for a write that
/// happened. These run that path on one PostgreSQL, with a read that fails as an
/// unreachable node does.
@Suite("A read-back after its write's COMMIT")
struct ReadAfterCommitTests {
    @Test("a read-back that cannot reach a node runs again and the committed write answers; one that never can answers the failure after its retries; the write runs once either way")
    func readBackRunsAgain() async throws {
        try await APIHarness.run { api in
            let tag = String(UUID().uuidString.prefix(8)).lowercased()
            let writes = PostgresQuery(unsafeSQL: "public.read_back_writes_\(tag)"), reads = PostgresQuery(unsafeSQL: "public.read_back_reads_\(tag)")
            let flaky = PostgresQuery(unsafeSQL: "public.read_back_flaky_\(tag)")
            try await api.asSuperuser("create table \(writes) (n int)")
            try await api.asSuperuser("grant insert on \(writes) to diary_app")
            try await api.asSuperuser("create sequence \(reads)")
            // As a restarting node answers: 57P03, cannot_connect_now, until `failures` reads have failed.
            try await api.asSuperuser("""
                create function \(flaky)(failures int) returns int language plpgsql security definer as $$
                begin
                    if nextval('\(reads)') <= failures then
                        raise exception 'the node is starting up' using errcode = '57P03';
                    end if;
                    return 1;
                end $$
                """)
            try await api.asSuperuser("grant execute on function \(flaky)(int) to diary_app")

            let alice = try await api.signIn("read-back-\(tag)")
            let tokens = TokenService(key: try TokenService.loadKey(path: nil, dataDirectory: api.dataDirectory, production: false))
            let scope = RequestScope(
                identity: try await tokens.verifyAccessToken(alice.accessToken), pool: api.pool, photoLinks: PhotoLinks(key: SymmetricKey(size: .bits256)),
                inviteLinks: InviteLinks(publicURL: ServerConfiguration.developmentPublicURL), database: .citus)

            let answered = try await scope.run(["insert into \(writes) values (1)"], thenRead: ["select \(flaky)(2) as ok"])
            #expect(try answered.last?.first?.decode("ok", as: Int.self) == 1)

            await #expect(throws: PostgresError.self) {
                try await scope.run(["insert into \(writes) values (2)"], thenRead: ["select \(flaky)(1000) as ok"])
            }
            let written = try await api.asSuperuser("select count(*)::int8 as n from \(writes)")
            #expect(try written.first?.decode("n", as: Int.self) == 2, "each write committed once")
            // Three reads for the first (two failed), then six for the second, which gave up.
            let attempts = try await api.asSuperuser("select last_value from \(reads)")
            #expect(try attempts.first?.decode("last_value", as: Int.self) == 3 + RequestScope.Retry.readBack.attempts)
            #expect(RequestScope.Retry.readBack.attempts == 6)

            try await api.asSuperuser("drop function \(flaky)(int)")
            try await api.asSuperuser("drop sequence \(reads)")
            try await api.asSuperuser("drop table \(writes)")
        }
    }
}
