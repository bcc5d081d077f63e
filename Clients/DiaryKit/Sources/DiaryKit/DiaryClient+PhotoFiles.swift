import DiaryAPI
public import Foundation
import HTTPTypes
import OpenAPIRuntime

/// How far a photo's upload or download has got.
public struct TransferProgress: Sendable, Hashable {
    /// Bytes handed to the network (an upload) or written to the file (a download).
    public var completed: Int64
    /// The whole size, when known.
    public var total: Int64?

    /// Creates a report.
    public init(completed: Int64, total: Int64?) {
        self.completed = completed
        self.total = total
    }

    /// The fraction done, 0 to 1, when the size is known.
    public var fraction: Double? { total.map { $0 > 0 ? Double(completed) / Double($0) : 1 } }
}

/// Reports progress; called on no particular thread.
public typealias ProgressHandler = @Sendable (TransferProgress) -> Void

extension DiaryClient {
    /// Uploads an image from a file, read in 64 KiB pieces as the transport takes them, with
    /// progress as each piece is handed over; otherwise as `uploadPhoto(_:format:)`. On Apple's
    /// platforms URLSession streams the pieces; FoundationNetworking (Linux) gathers them first.
    public func uploadPhoto(fileURL: URL, format: PhotoFormat, progress: ProgressHandler? = nil) async throws -> Photo {
        try await uploadPhoto(try Self.fileBody(fileURL, progress: progress), format: format)
    }

    /// A file as a request body, read a chunk at a time, its progress reported.
    static func fileBody(_ fileURL: URL, progress: ProgressHandler?) throws -> HTTPBody {
        let size = try FileManager.default.attributesOfItem(atPath: fileURL.path)[.size] as? NSNumber
        let total = size?.int64Value
        return HTTPBody(FileChunks(fileURL: fileURL, total: total, progress: progress),
                        length: total.map { .known($0) } ?? .unknown, iterationBehavior: .multiple)
    }

    /// Downloads a whole photo into `fileURL` as it arrives, never whole in memory, replacing
    /// the file only once every byte is in; returns the ETag, to send as `ifNoneMatch` next
    /// time, or nil and leaves the file alone when `ifNoneMatch` is still current.
    @discardableResult
    public func downloadPhoto(_ photo: Photo, to fileURL: URL, ifNoneMatch: String? = nil,
                              progress: ProgressHandler? = nil) async throws -> DownloadedFile {
        let (status, body, etag) = try await photoResponse(photo, range: nil, ifNoneMatch: ifNoneMatch)
        switch status {
        case 304: return .notModified
        case 200:
            try await Self.write(body, to: fileURL, total: Int64(photo.bytes), progress: progress)
            return .written(etag: etag)
        default: throw DiaryError.unexpectedResponse(status: status)
        }
    }

    /// Streams `body` into a file beside `fileURL`, then moves it into place.
    static func write(_ body: HTTPBody?, to fileURL: URL, total: Int64?, progress: ProgressHandler?) async throws {
        let partial = fileURL.deletingLastPathComponent().appendingPathComponent(".\(fileURL.lastPathComponent).\(UUID().uuidString).partial")
        guard FileManager.default.createFile(atPath: partial.path, contents: nil) else { throw CocoaError(.fileWriteUnknown) }
        do {
            let handle = try FileHandle(forWritingTo: partial)
            defer { try? handle.close() }
            var written: Int64 = 0
            if let body {
                for try await chunk in body {
                    try handle.write(contentsOf: chunk)
                    written += Int64(chunk.count)
                    progress?(TransferProgress(completed: written, total: total))
                }
            }
            try handle.synchronize()
            if FileManager.default.fileExists(atPath: fileURL.path) {
                _ = try FileManager.default.replaceItemAt(fileURL, withItemAt: partial)
            } else {
                try FileManager.default.moveItem(at: partial, to: fileURL)
            }
        } catch {
            try? FileManager.default.removeItem(at: partial)
            throw error
        }
    }
}

/// What a download to a file did.
public enum DownloadedFile: Sendable, Hashable {
    /// The file holds the photo; send `etag` as `ifNoneMatch` next time.
    case written(etag: String?)
    /// The copy held is current; the file was not touched.
    case notModified
}

/// A file's bytes in 64 KiB pieces, read as they are asked for; each iteration reads the file
/// anew, so a request sent again (after a token refresh) sends it whole again.
struct FileChunks: AsyncSequence, Sendable {
    typealias Element = ArraySlice<UInt8>
    let fileURL: URL
    let total: Int64?
    let progress: ProgressHandler?

    struct AsyncIterator: AsyncIteratorProtocol {
        let fileURL: URL
        let total: Int64?
        let progress: ProgressHandler?
        var handle: FileHandle?
        var sent: Int64 = 0

        mutating func next() async throws -> ArraySlice<UInt8>? {
            if handle == nil { handle = try FileHandle(forReadingFrom: fileURL) }
            guard let data = try handle?.read(upToCount: 64 * 1024), !data.isEmpty else {
                try handle?.close()
                return nil
            }
            sent += Int64(data.count)
            progress?(TransferProgress(completed: sent, total: total))
            return ArraySlice(data)
        }
    }

    func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(fileURL: fileURL, total: total, progress: progress)
    }
}
