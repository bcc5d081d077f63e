#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
package import Foundation
package import NIOCore
package import NIOPosix
import _NIOFileSystem

/// The embedded `PhotoStore`: files in a folder (`PHOTO_STORE_DIR`, default .data/photos),
/// `ab/abcdef…` by hash, so that no directory holds more than a 256th of them.
///
/// A file is written under a temporary name in `tmp/`, fsynced, renamed into place and its
/// directory fsynced: after a crash a name holds the whole photo or nothing. Blocking calls
/// run on NIO's thread pool, never on an event loop.
package struct FolderPhotoStore: PhotoStore {
    package let root: String
    let threadPool: NIOThreadPool
    /// What a download reads at a time: enough to keep a socket busy, little enough that
    /// many downloads at once stay small (one chunk each in flight).
    static let chunkLength = 256 * 1024

    package init(root: String, threadPool: NIOThreadPool = .singleton) throws {
        self.root = root
        self.threadPool = threadPool
        try FileManager.default.createDirectory(atPath: (root as NSString).appendingPathComponent("tmp"), withIntermediateDirectories: true)
    }

    func path(of hash: String) -> String {
        "\(root)/\(hash.prefix(2))/\(hash)"
    }

    package func put(_ bytes: [UInt8], hash: String) async throws {
        precondition(Self.isHash(hash), "not a content hash")
        let root = root
        let final = path(of: hash)
        try await threadPool.runIfActive {
            let directory = "\(root)/\(hash.prefix(2))"
            if mkdir(directory, 0o700) != 0, errno != EEXIST { throw PhotoStoreError.io("mkdir \(directory): \(errno)") }
            let temporary = "\(root)/tmp/\(UUID().uuidString.lowercased())"
            let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw PhotoStoreError.io("open \(temporary): \(errno)") }
            var closed = false
            defer {
                if !closed { close(fd) }
            }
            do {
                try bytes.withUnsafeBytes { buffer in
                    var offset = 0
                    while offset < buffer.count {
                        let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                        if written < 0 {
                            if errno == EINTR { continue }
                            throw PhotoStoreError.io("write \(temporary): \(errno)")
                        }
                        offset += written
                    }
                }
                guard fsync(fd) == 0 else { throw PhotoStoreError.io("fsync \(temporary): \(errno)") }
                closed = true
                guard close(fd) == 0 else { throw PhotoStoreError.io("close \(temporary): \(errno)") }
                guard rename(temporary, final) == 0 else { throw PhotoStoreError.io("rename \(temporary): \(errno)") }
            } catch {
                unlink(temporary)
                throw error
            }
            Self.synchronizeDirectory(directory)
        }
    }

    package func contains(_ hash: String) async throws -> Bool {
        let file = path(of: hash)
        return try await threadPool.runIfActive { access(file, F_OK) == 0 }
    }

    /// A file's absence is known at once; its bytes are read when they are taken.
    package func bytes(of hash: String, range: Range<Int>) async throws -> PhotoBytes {
        guard try await contains(hash) else { throw PhotoStoreError.missing(hash) }
        let file = path(of: hash)
        return PhotoBytes { body in
            guard !range.isEmpty else { return }
            do {
                // One chunk at a time, the next read only once the last is taken: readChunks reads
                // eight ahead, which made a slow download hold 2 MiB instead of 256 KiB.
                try await FileSystem.shared.withFileHandle(forReadingAt: FilePath(file)) { handle in
                    var offset = range.lowerBound
                    while offset < range.upperBound {
                        let length = min(Self.chunkLength, range.upperBound - offset)
                        let chunk = try await handle.readChunk(fromAbsoluteOffset: Int64(offset), length: .bytes(Int64(length)))
                        guard chunk.readableBytes > 0 else { throw PhotoStoreError.io("\(hash) ended at \(offset) of \(range.upperBound)") }
                        offset += chunk.readableBytes
                        try await body(chunk)
                    }
                }
            } catch let error as FileSystemError where error.code == .notFound {
                throw PhotoStoreError.missing(hash)
            }
        }
    }

    package func remove(_ hash: String) async throws {
        let file = path(of: hash)
        try await threadPool.runIfActive {
            guard unlink(file) == 0 || errno == ENOENT else { throw PhotoStoreError.io("unlink \(file): \(errno)") }
        }
    }

    package func forEachObject(writtenBefore date: Date, page: ([String]) async throws -> Void) async throws {
        let root = root
        let directories = try await threadPool.runIfActive {
            (try? FileManager.default.contentsOfDirectory(atPath: root))?.filter { $0.utf8.count == 2 }.sorted() ?? []
        }
        // A write interrupted by a crash leaves its temporary file; one this old is not in progress.
        try await threadPool.runIfActive {
            for name in Self.names(in: "\(root)/tmp", modifiedBefore: date) { unlink("\(root)/tmp/\(name)") }
        }
        for directory in directories {
            let names = try await threadPool.runIfActive {
                Self.names(in: "\(root)/\(directory)", modifiedBefore: date).filter { Self.isHash($0) }
            }
            for batch in names.inBatches(of: 500) {
                try await page(batch)
            }
        }
    }

    static func names(in directory: String, modifiedBefore date: Date) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        return names.filter { name in
            guard let modified = (try? FileManager.default.attributesOfItem(atPath: "\(directory)/\(name)"))?[.modificationDate] as? Date else { return false }
            return modified < date
        }
    }

    /// Makes a rename durable. A failure costs durability of the name only, never its bytes.
    static func synchronizeDirectory(_ directory: String) {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}
