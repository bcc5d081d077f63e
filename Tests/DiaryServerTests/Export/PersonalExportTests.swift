import DiaryModels
import Foundation
import PostgresClient
import TestSupport
import Testing

@testable import DiaryCore
@testable import DiaryHTTP

/// `GET /v1/me/export`: everything about the caller, nothing of anyone else's.
@Suite("Personal export")
struct PersonalExportTests {
    @Test("the caller's profile, devices, memberships, own entries in every diary with photos, reads and purchase events; others' entries left out")
    func personalExport() async throws {
        try await APIHarness.run { api in
            let couple = try await EntryPhotoTests.couple(api)
            let family = try await api.createDiary("家族", type: .family, token: couple.alice.accessToken)
            let photo = try await EntryPhotoTests.upload(api, couple.alice)
            #expect(try await api.call(.post, "/v1/diaries/\(couple.diary.id)/entries", token: couple.alice.accessToken,
                                       body: CreateEntryRequest(content: "アリスの日記", photoIds: [photo.id])).status == .created)
            #expect(try await api.post("家族への手紙", in: family.id, token: couple.alice.accessToken).status == .created)
            let bobs = try await api.post("ボブの日記", in: couple.diary.id, token: couple.bob.accessToken).decode(Entry.self)
            #expect(try await api.call(.post, "/v1/diaries/\(couple.diary.id)/entries/\(bobs.id)/read", token: couple.alice.accessToken).status == .noContent)
            #expect(try await api.call(.put, "/v1/me/devices/\(String(repeating: "ab", count: 32))", token: couple.alice.accessToken,
                                       json: #"{"environment":"sandbox"}"#).status.code < 300)

            let reply = try await api.call(.get, "/v1/me/export", token: couple.alice.accessToken)
            #expect(reply.status == .ok && reply.headers[.contentType] == "application/zip")
            let unpacked = try await DiaryExportTests.unpack(reply)
            let names = try FileManager.default.contentsOfDirectory(atPath: unpacked.folder.path).sorted()
            #expect(names == ["README.txt", "billing.json", "departures.json", "entries.json", "memberships.json", "photos", "profile.json", "reads.json"])
            #expect(try unpacked.decode([Departure].self, "departures.json") == [], "she left no diary")
            let profile = try unpacked.decode(PersonalProfile.self, "profile.json")
            #expect(profile.me.id == couple.alice.user.id && profile.devices.count == 1)
            #expect(Set(try unpacked.decode(DiaryList.self, "memberships.json").diaries.map(\.id)) == [couple.diary.id, family.id])
            let entries = try unpacked.decode([PersonalExportedEntry].self, "entries.json")
            #expect(entries.map(\.content) == ["アリスの日記", "家族への手紙"], "her own, oldest first, nobody else's")
            #expect(entries[0].photos == ["photos/\(photo.id.canonicalText).jpg"])
            #expect(FileManager.default.fileExists(atPath: unpacked.folder.appendingPathComponent(entries[0].photos[0]).path))
            #expect(try unpacked.decode([PersonalReadReceipt].self, "reads.json").map(\.entryId) == [bobs.id])
            #expect(try unpacked.decode([PersonalBillingEvent].self, "billing.json") == [])
            let all = try ["entries.json", "reads.json", "profile.json"].map { String(decoding: try unpacked.data($0), as: UTF8.self) }.joined()
            #expect(!all.contains("ボブの日記"))
        }
    }
}
