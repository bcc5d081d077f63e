import Foundation
import Testing
import TestSupport

@testable import DiaryCore
@testable import DiaryHTTP

/// Every refusal is one row of refusals.tsv, and what is made from it (the server's `Refusal`,
/// DiaryKit's `ProblemCode`, openapi.yaml's codes, docs/refusals.md) is what `make refusals`
/// makes: a new refusal is one `raise` in SQL and one row.
@Suite("The refusal table")
struct RefusalTableTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test("every file made from refusals.tsv is what make refusals writes")
    func madeFilesAreFresh() async throws {
        let checked = try await Spawn.run("/usr/bin/env", ["python3", Self.root.appendingPathComponent("scripts/refusals.py").path, "--check"])
        #expect(checked.status == 0, "\(checked.output)")
    }

    @Test("the SQLSTATEs sql/definitions raises are the table's, and each of the table's is raised")
    func sqlStatesAreTheTables() throws {
        let folder = Self.root.appendingPathComponent("sql/definitions")
        var raised = Set<String>()
        for file in try FileManager.default.contentsOfDirectory(atPath: folder.path) where file.hasSuffix(".sql") {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for match in text.matches(of: #/errcode = '(ZN\w+)'/#) { raised.insert(String(match.1)) }
        }
        #expect(raised.contains("ZN001"), "the reader finds the codes")
        #expect(raised == Set(Refusal.sqlStates), "raised but not in the table: \(raised.subtracting(Refusal.sqlStates).sorted()); in the table but never raised: \(Set(Refusal.sqlStates).subtracting(raised).sorted())")
    }

    @Test("a refusal raised in SQL reaches the client as its row says: status, code, title, and the raise's own sentence")
    func raisedRefusalAnswersAsTheRowSays() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("alice")
            let reply = try await api.join("NOSUCHCODE", token: alice.accessToken)
            #expect(reply.status.code == Refusal.inviteCodeInvalid.status)
            #expect(reply.code == "invite_code_invalid")
            let body = try #require(try JSONSerialization.jsonObject(with: Data(reply.text.utf8)) as? [String: Any])
            #expect(body["title"] as? String == Refusal.inviteCodeInvalid.title)
            #expect(body["detail"] as? String == "no diary has this invite code")
        }
    }

    @Test("the README sends a reader to the codes in docs/refusals.md")
    func readmeLinksTheTable() throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        #expect(text.contains("(docs/refusals.md)"))
    }
}
