import DiaryAPI
import Foundation

extension DiaryClient {
    /// The caller's diaries, most recently written first.
    public func diaries() async throws -> [Diary] {
        try await perform { try await api.listDiaries().ok.body.json.diaries }.map(Diary.init)
    }

    /// One diary, with `changesCursor`: the position to follow its changes from.
    public func diary(id diaryID: String) async throws -> Diary {
        Diary(try await perform { try await api.getDiary(path: .init(diaryId: diaryID)).ok.body.json })
    }

    /// Creates a diary the caller owns. The free plan creates one: a second throws
    /// `premium_required`. With `id` (a UUID the app chose and kept), a retry after a lost
    /// answer returns the diary the first call made, never a second one.
    public func createDiary(id: String? = nil, name: String, type: DiaryType) async throws -> Diary {
        guard let kind = Components.Schemas.DiaryType(rawValue: type.rawValue) else {
            throw DiaryError.problem(Problem(status: 400, code: .validationFailed, title: "Bad Request",
                                             detail: "DiaryKit cannot create a diary of type \(type.rawValue)"))
        }
        return Diary(try await perform {
            let output = try await api.createDiary(body: .json(.init(id: id, name: name, _type: kind)))
            if case .ok(let replayed) = output { return try replayed.body.json }
            return try output.created.body.json
        })
    }

    /// Joins the diary whose invite code this is, as typed, or whose invite link
    /// (`Diary.inviteURL`) this is (`invite_code_invalid`, `diary_full`).
    public func joinDiary(inviteCode: String) async throws -> Diary {
        Diary(try await perform { try await api.joinDiary(body: .json(.init(inviteCode: inviteCode))).ok.body.json })
    }

    /// Renames a diary (owner only).
    public func renameDiary(id diaryID: String, to name: String) async throws -> Diary {
        Diary(try await perform {
            try await api.renameDiary(path: .init(diaryId: diaryID), body: .json(.init(name: name))).ok.body.json
        })
    }

    /// Replaces a diary's invite code (owner only); the old code and its link stop working.
    public func replaceInviteCode(diaryID: String) async throws -> Invitation {
        let answer = try await perform { try await api.replaceInviteCode(path: .init(diaryId: diaryID)).ok.body.json }
        return Invitation(code: answer.inviteCode, url: answer.inviteUrl)
    }

    /// A diary's members.
    public func members(diaryID: String) async throws -> [Member] {
        try await perform { try await api.listMembers(path: .init(diaryId: diaryID)).ok.body.json.members }.map(Member.init)
    }

    /// Removes a member (owner), or leaves the diary when `userID` is the caller's own.
    public func removeMember(diaryID: String, userID: String) async throws {
        _ = try await perform { try await api.removeMember(path: .init(diaryId: diaryID, userId: userID)).noContent }
    }
}

/// A diary's invitation: the code to type, and the link to share.
public struct Invitation: Sendable, Hashable {
    /// The code, ten characters (hyphens and spaces are ignored when typed).
    public var code: String
    /// `<PUBLIC_URL>/i/<code>`.
    public var url: String
}
