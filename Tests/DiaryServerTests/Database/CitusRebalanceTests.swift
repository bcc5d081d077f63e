import DiaryModels
import Foundation
import PostgresClient
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryServer

/// A third worker joins the running cluster, and `diary-server rebalance` spreads the shards
/// while two servers take posts and reads, run by scripts/test-citus.sh last
/// (CITUS_REBALANCE_DATABASE_URL), since it changes the cluster's layout for good.
@Suite("A worker joins a loaded cluster", .serialized)
struct CitusRebalanceTests {
    static let newWorker = "worker3"
    static let pairs = 8

    static var superuserURL: String { get throws { try TestPlan.setting("CITUS_REBALANCE_DATABASE_URL", plan: "cluster-rebalance") } }

    static func owner() throws -> PostgresConfiguration {
        try PostgresConfiguration(url: try superuserURL).as(TestDatabase.ownerRole)
    }

    @Test("a third worker added and the shards rebalanced while two servers take posts and reads: the rebalance finishes, no 5xx, nothing acknowledged lost, counters exact, shards on three workers, row security forced and every policy on each moved shard, strangers still see nothing")
    func workerJoinsUnderLoad() async throws {
        try await APIHarness.run(on: try Self.owner(), citus: true) { first in
            try await APIHarness.run(on: try Self.owner(), sharing: first, citus: true) { second in
                try await Self.joinUnderLoad(servers: [first, second])
            }
        }
    }

    static func joinUnderLoad(servers: [APIHarness]) async throws {
        let api = servers[0]
        let tag = String(UUID().uuidString.prefix(8)).lowercased()
        var couples: [(diary: UUID, writer: Session, reader: Session)] = []
        for index in 0..<pairs {
            let writer = try await api.signIn("move-w\(index)-\(tag)"), reader = try await api.signIn("move-r\(index)-\(tag)")
            let diary = try await api.createDiary("引っ越し \(index)", type: .couple, token: writer.accessToken)
            #expect(try await api.join(diary.inviteCode, token: reader.accessToken).status == .ok)
            couples.append((diary.id, writer, reader))
        }
        let stream = LoadStream(servers: servers, clients: couples.map { LoadStream.Client(token: $0.writer.accessToken, diary: $0.diary, reader: $0.reader.accessToken) })
        let (outcomes, move) = try await stream.run(workers: pairs, tail: .seconds(2)) {
            let added = try await Spawn.run(ScratchCluster.packageRoot.appendingPathComponent("scripts/citus.sh").path, ["add-worker", newWorker, try owner().database ?? ""])
            try #require(added.status == 0, "scripts/citus.sh add-worker: \(added.output)")
            let began = ContinuousClock.now
            let result = try await ServerProcess.runCommand(["rebalance", "--database-url", try Self.superuserURL])
            try #require(result.status == 0, "rebalance: \(result.output)")
            return (began: began, ended: ContinuousClock.now, output: result.output)
        }
        let duringMove = outcomes.filter { $0.started + $0.duration >= move.began && $0.started <= move.ended }
        let longest = duringMove.map(\.duration).max() ?? .zero
        print("rebalance under load: \(move.output.split(separator: "\n").last ?? ""); \(outcomes.count) requests, \(duringMove.count) during the move, the longest of them \(longest)")
        #expect(move.output.contains("moved"), "\(move.output)")
        // The moves' catch-up applied because each subscription role got BYPASSRLS, not because row security was lifted.
        #expect(move.output.contains("gets BYPASSRLS"), "\(move.output)")
        #expect(duringMove.count > 0 && outcomes.filter { $0.started > move.ended }.count > 0)
        #expect(outcomes.allSatisfy { $0.status.code < 300 }, "\(outcomes.filter { $0.status.code >= 300 }.prefix(5).map { "\($0.status) \($0.code ?? "")" })")

        // Nothing acknowledged is lost, and the counters agree with the rows.
        try await api.expectKept(outcomes)
        let differences = try await TestDatabase.withPool(try owner(), size: 1) { try await CounterReconciliation(pool: $0).differences() }
        #expect(differences.isEmpty, "\(differences)")

        // The diaries' shards over three workers.
        let workers = try await api.asSuperuser("select count(distinct nodeport)::int8 as n from citus_shards where table_name = 'diaries'::regclass")
        #expect(try workers.first?.decode("n", as: Int.self) == 3)

        // Both walls on every shard, moved or not: row security enabled and forced, and every
        // policy of its table; and through the server, a stranger sees none of the diaries.
        let tables = try await api.asSuperuser("select logicalrelid::regclass::text as name from pg_dist_partition where partmethod = 'h'").map { try $0.decode("name", as: String.self) }
        #expect(tables.count == CitusSchema.placements.filter { if case .byDiary = $0.placement { true } else { false } }.count)
        for table in tables {
            let policies = try #require(try await api.asSuperuser("select count(*)::int8 as n from pg_policy where polrelid = \(table)::regclass").first?.decode("n", as: Int.self))
            #expect(policies > 0)
            let placements = try await api.asSuperuser("""
                select nodeport, success, result from run_command_on_placements(\(table)::regclass,
                    $$select c.relrowsecurity and c.relforcerowsecurity and (select count(*) from pg_policy p where p.polrelid = c.oid) = \(PostgresQuery(unsafeSQL: String(policies)))
                      from pg_class c where c.oid = '%s'::regclass$$)
                """)
            for placement in placements {
                let port = try placement.decode("nodeport", as: Int.self), result = try placement.decode("result", as: String.self)
                #expect(try placement.decode("success", as: Bool.self) && result == "t", "\(table) on \(port): \(result)")
            }
        }
        let stranger = try await api.signIn("move-stranger-\(tag)")
        for couple in couples {
            #expect(try await api.call(.get, "/v1/diaries/\(couple.diary)", token: stranger.accessToken).status == .notFound)
            #expect(try await api.call(.get, "/v1/diaries/\(couple.diary)/entries", token: stranger.accessToken).status == .notFound)
            #expect(try await api.call(.get, "/v1/diaries/\(couple.diary)/entries", token: couple.reader.accessToken).status == .ok)
        }
    }
}
