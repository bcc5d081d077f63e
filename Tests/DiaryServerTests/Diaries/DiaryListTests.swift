import DiaryModels
import Foundation
import Testing
@testable import DiaryCore
@testable import DiaryHTTP

/// `GET /v1/diaries`' order, which one PostgreSQL sorts in SQL and the cluster in Swift
/// (`DiaryRepository.latestWrittenFirst`): this holds both to the same answer.
@Suite("The diaries list")
struct DiaryListTests {
    @Test("the latest written first; diaries without an entry after, the newest first")
    func latestWrittenFirst() async throws {
        try await APIHarness.run { api in try await Self.listsLatestWrittenFirst(api) }
    }

    /// On whatever database `api` serves (also the cluster: CitusClusterTests).
    static func listsLatestWrittenFirst(_ api: APIHarness, name: String = "lister") async throws {
        let alice = try await api.signIn(name)
        var created: [Diary] = []
        for index in 0..<4 { created.append(try await api.createDiary("順番 \(index)", type: .friends, token: alice.accessToken)) }
        #expect(try await api.post("一番目", in: created[1].id, token: alice.accessToken).status == .created)
        #expect(try await api.post("二番目", in: created[2].id, token: alice.accessToken).status == .created)
        let listed = try await api.call(.get, "/v1/diaries", token: alice.accessToken).decode(DiaryList.self).diaries.map(\.id)
        #expect(listed == [created[2].id, created[1].id, created[3].id, created[0].id])
    }
}
