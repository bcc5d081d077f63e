import DiaryModels
import Foundation
import Testing
import TestSupport
@testable import DiaryCore
@testable import DiaryHTTP

/// Invite links: every answer that carries a diary's invite code carries its link, a join
/// takes the link as well as the code, and rotating the code kills the old link.
@Suite("Invite links")
struct InviteLinkTests {
    @Test("reading a join's input: a code, this server's link, or any other link")
    func readingLinks() {
        let links = InviteLinks(publicURL: URL(string: "https://diary.example/")!)
        #expect(links.url(for: "ABCDE12345") == "https://diary.example/i/ABCDE12345")
        #expect(links.read("abcde-12345") == .code("abcde-12345"))
        #expect(links.read("https://diary.example/i/ABCDE12345") == .link(code: "ABCDE12345"))
        #expect(links.read("HTTPS://DIARY.EXAMPLE/i/abcde12345") == .link(code: "abcde12345"))
        for foreign in ["https://evil.example/i/ABCDE12345", "http://diary.example/i/ABCDE12345", "https://diary.example.evil/i/ABCDE12345",
                        "https://diary.example/i/ABCDE12345?from=line", "https://diary.example/i/ABCDE12345#x", "https://diary.example/j/ABCDE12345",
                        "https://diary.example/i/", "https://diary.example/i/AB/CD", "https://diary.example:444/i/ABCDE12345"] {
            #expect(links.read(foreign) == .foreignLink, "\(foreign)")
        }
    }

    @Test("create, read, list and rotate answer the link; a join takes it; the old link dies with its code; a foreign link is 400")
    func linksThroughTheAPI() async throws {
        try await APIHarness.run { api in
            let aiko = try await api.signIn("aiko")
            let ben = try await api.signIn("ben")
            let carol = try await api.signIn("carol")
            let diary = try await api.createDiary("ともだち", type: .friends, token: aiko.accessToken)
            #expect(diary.inviteUrl.hasSuffix("/i/\(diary.inviteCode)") && diary.inviteUrl.hasPrefix("http://"))
            let read = try await api.call(.get, "/v1/diaries/\(diary.id)", token: aiko.accessToken).decode(Diary.self)
            #expect(read.inviteUrl == diary.inviteUrl)
            let listed = try await api.call(.get, "/v1/diaries", token: aiko.accessToken).decode(DiaryList.self)
            #expect(listed.diaries.map(\.inviteUrl) == [diary.inviteUrl])

            let joined = try await api.call(.post, "/v1/diaries/join", token: ben.accessToken, body: JoinDiaryRequest(inviteCode: diary.inviteUrl))
            #expect(joined.status == .ok)
            #expect(try joined.decode(Diary.self).id == diary.id)

            let rotated = try await api.call(.post, "/v1/diaries/\(diary.id)/invite-code", token: aiko.accessToken).decode(InviteCodeResponse.self)
            #expect(rotated.inviteCode != diary.inviteCode)
            #expect(rotated.inviteUrl == diary.inviteUrl.replacingOccurrences(of: diary.inviteCode, with: rotated.inviteCode))
            let stale = try await api.call(.post, "/v1/diaries/join", token: carol.accessToken, body: JoinDiaryRequest(inviteCode: diary.inviteUrl))
            #expect(stale.status == .notFound && stale.code == "invite_code_invalid")

            let base = String(diary.inviteUrl.dropLast("/i/\(diary.inviteCode)".count))
            for foreign in ["https://evil.example/i/\(rotated.inviteCode)", "\(rotated.inviteUrl)?utm_source=line", "\(base)/x/\(rotated.inviteCode)"] {
                let refused = try await api.call(.post, "/v1/diaries/join", token: carol.accessToken, body: JoinDiaryRequest(inviteCode: foreign))
                #expect(refused.status == .badRequest && refused.code == "validation_failed", "\(foreign): \(refused.status)")
            }
            let fresh = try await api.call(.post, "/v1/diaries/join", token: carol.accessToken, body: JoinDiaryRequest(inviteCode: rotated.inviteUrl))
            #expect(fresh.status == .ok)
        }
    }

    @Test("a rename's change (socket and delta sync) carries the link")
    func changesCarryTheLink() async throws {
        try await APIHarness.run { api in
            let aiko = try await api.signIn("aiko")
            let diary = try await api.createDiary("日記", type: .couple, token: aiko.accessToken)
            let cursor = try #require(try await api.call(.get, "/v1/diaries/\(diary.id)", token: aiko.accessToken).decode(Diary.self).changesCursor)
            #expect(try await api.call(.patch, "/v1/diaries/\(diary.id)", token: aiko.accessToken, body: UpdateDiaryRequest(name: "改名")).status == .ok)
            let changes = try await api.call(.get, "/v1/diaries/\(diary.id)/changes?since=\(cursor)", token: aiko.accessToken)
            let object = try #require(try JSONSerialization.jsonObject(with: changes.body) as? [String: Any])
            let events = try #require(object["changes"] as? [[String: Any]])
            let renamed = try #require(events.first { $0["type"] as? String == "diary.updated" })
            let data = try #require(renamed["data"] as? [String: Any])
            #expect(data["inviteUrl"] as? String == diary.inviteUrl)
        }
    }
}
