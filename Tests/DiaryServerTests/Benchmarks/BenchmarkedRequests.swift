import DiaryModels
import Foundation
import HTTPTypes

/// The five requests `make bench` drives (Benchmarks/endpoints), made ready on a fresh
/// database: a family diary of aiko's with one entry, which ben has joined.
struct BenchmarkedRequest {
    var script: String
    var method: HTTPRequest.Method
    var path: String
    var json: String?
    var token: String

    static func prepare(_ api: APIHarness) async throws -> [BenchmarkedRequest] {
        let aiko = try await api.signIn("aiko")
        let ben = try await api.signIn("ben")
        let diary = try await api.createDiary("日記", type: .family, token: aiko.accessToken)
        let entry = try await api.post("一行", in: diary.id, token: aiko.accessToken).decode(DiaryModels.Entry.self)
        let joined = try await api.join(diary.inviteCode, token: ben.accessToken)
        guard joined.status == .ok else { throw HarnessError("ben's join answered \(joined.status)") }
        return [
            .init(script: "post_entry", method: .post, path: "/v1/diaries/\(diary.id)/entries",
                  json: #"{"id":"\#(UUID())","content":"もう一行"}"#, token: aiko.accessToken),
            .init(script: "timeline", method: .get, path: "/v1/diaries/\(diary.id)/entries?limit=20", token: aiko.accessToken),
            .init(script: "mark_read", method: .post, path: "/v1/diaries/\(diary.id)/entries/\(entry.id)/read", token: ben.accessToken),
            .init(script: "list_diaries", method: .get, path: "/v1/diaries", token: ben.accessToken),
            .init(script: "join", method: .post, path: "/v1/diaries/join",
                  json: #"{"inviteCode":"\#(diary.inviteCode)"}"#, token: ben.accessToken),
        ]
    }
}
