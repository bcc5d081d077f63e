import DiaryAPI
public import Foundation
public import OpenAPIRuntime

/// An export as it streams from the server: a ZIP, with the file name the server gave it.
public struct DiaryExport: Sendable {
    /// The name to save it under (the diary's own, from `filename*`), such as `ふたりの日記-20261126.zip`.
    public var filename: String?
    /// The ZIP's bytes, as they arrive: the server builds it while it sends.
    public var body: HTTPBody

    /// Streams the ZIP into a file at `url`, replacing any there.
    public func write(to url: URL) async throws {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        for try await chunk in body {
            try handle.write(contentsOf: Data(chunk))
        }
    }

    /// The file name in a `Content-Disposition`: RFC 6266's `filename*` (UTF-8,
    /// percent-encoded) when present, else the plain `filename`.
    static func filename(in contentDisposition: String?) -> String? {
        guard let contentDisposition else { return nil }
        let parameters = contentDisposition.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        if let extended = parameters.first(where: { $0.lowercased().hasPrefix("filename*=") }) {
            let value = extended.dropFirst("filename*=".count)
            if let quote = value.range(of: "''"), value[..<quote.lowerBound].uppercased() == "UTF-8" {
                return String(value[quote.upperBound...]).removingPercentEncoding
            }
        }
        if let plain = parameters.first(where: { $0.lowercased().hasPrefix("filename=") }) {
            return String(plain.dropFirst("filename=".count)).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        return nil
    }
}

extension DiaryClient {
    /// The whole diary as a ZIP (its entries, photos and a printable book), free for every
    /// member; works during maintenance and for any app version. At most 10 exports a day.
    public func exportDiary(id diaryID: String) async throws -> DiaryExport {
        let ok = try await perform { try await api.exportDiary(path: .init(diaryId: diaryID)).ok }
        return DiaryExport(filename: DiaryExport.filename(in: ok.headers.contentDisposition), body: try ok.body.applicationZip)
    }

    /// Everything held about the user as a ZIP (the APPI disclosure); counts toward the same daily limit.
    public func exportAccount() async throws -> DiaryExport {
        let ok = try await perform { try await api.exportMe().ok }
        return DiaryExport(filename: DiaryExport.filename(in: ok.headers.contentDisposition), body: try ok.body.applicationZip)
    }
}
