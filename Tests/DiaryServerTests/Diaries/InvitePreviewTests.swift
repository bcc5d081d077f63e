import DiaryModels
import Foundation
import PostgresClient
import TestSupport
import Testing

@testable import DiaryCore
@testable import DiaryHTTP

/// `GET /v1/invites/{code}`: a diary's type and size before joining, nothing more.
@Suite("Invite preview")
struct InvitePreviewTests {
    @Test("a current code previews type, size and fullness, never the name or members; any other code 404 invite_code_invalid")
    func preview() async throws {
        try await APIHarness.run { api in
            let alice = try await api.signIn("Alice")
            let bob = try await api.signIn("Bob")
            let diary = try await api.createDiary("ひみつの名前", type: .couple, token: alice.accessToken)
            let typed = diary.inviteCode.lowercased().enumerated().map { $0.offset == 5 ? "-\($0.element)" : "\($0.element)" }.joined()
            let open = try await api.call(.get, "/v1/invites/\(typed)", token: bob.accessToken)
            #expect(open.status == .ok)
            #expect(try open.decode(InvitePreview.self) == InvitePreview(type: .couple, memberCount: 1))
            #expect(!open.text.contains("ひみつ") && !open.text.lowercased().contains(alice.user.id.uuidString.lowercased()) && !open.text.contains("Alice"))
            #expect(try await api.join(diary.inviteCode, token: bob.accessToken).status == .ok)
            let full = try await api.call(.get, "/v1/invites/\(diary.inviteCode)", token: bob.accessToken).decode(InvitePreview.self)
            #expect(full.full && full.memberCount == 2 && full.maxMembers == 2)

            let rotated = try await api.call(.post, "/v1/diaries/\(diary.id)/invite-code", token: alice.accessToken).decode(InviteCodeResponse.self)
            for code in [diary.inviteCode, "0000000000"] {
                let reply = try await api.call(.get, "/v1/invites/\(code)", token: bob.accessToken)
                #expect(reply.status == .notFound && reply.code == "invite_code_invalid", "\(code)")
            }
            #expect(try await api.call(.get, "/v1/invites/\(rotated.inviteCode)", token: bob.accessToken).status == .ok)
            #expect(try await api.call(.get, "/v1/invites/\(String(repeating: "A", count: 33))", token: bob.accessToken).status == .badRequest)
            #expect(try await api.call(.get, "/v1/invites/\(rotated.inviteCode)").status == .unauthorized)
        }
    }

    @Test("previews and invite pages share one limit per client address: over it 429 with Retry-After")
    func limited() async throws {
        var page = InvitePageConfiguration()
        page.pagesPerMinute = 3
        try await APIHarness.run(testing: .live, invitePage: page) { api in
            let bob = try await api.signIn("Bob")
            // Two pages and a preview spend the three: guessing codes is no faster split between them.
            for _ in 0..<2 { #expect(try await api.call(.get, "/i/0000000000").status == .notFound) }
            #expect(try await api.call(.get, "/v1/invites/0000000000", token: bob.accessToken).status == .notFound)
            #expect(try await api.call(.get, "/i/0000000000").status == .tooManyRequests)
            let refused = try await api.call(.get, "/v1/invites/0000000000", token: bob.accessToken)
            #expect(refused.status == .tooManyRequests && refused.code == "rate_limited")
            #expect(Int(refused.headers[.retryAfter] ?? "") ?? 0 >= 1)
        }
    }
}
