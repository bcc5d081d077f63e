import Foundation
import TestSupport

/// A WebSocket client on a plain socket that reads only when told to: the upgrade as a client
/// sends it, then the bytes as they come. With a small `receiveBuffer`, what it does not read
/// backs up into the server: the slowest reader there is.
final class RawWebSocket: @unchecked Sendable {
    private let socket: Int32
    private var received: [UInt8] = []

    init(port: Int, path: String = "/v1/realtime", token: String?, receiveBuffer: Int32? = nil) throws {
        socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer { setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        // A read that waits longer has failed; the test then says what it got.
        var limit = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: in_port_t(UInt16(port).bigEndian), sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        guard connected == 0 else {
            Foundation.close(socket)
            throw HarnessError("cannot connect")
        }
        let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n" + (token.map { "Authorization: Bearer \($0)\r\n" } ?? "") + "\r\n"
        _ = request.withCString { send(socket, $0, strlen($0), 0) }
    }

    /// The frames received so far, each one's opcode and payload.
    var frames: [(opcode: UInt8, payload: [UInt8])] {
        // Until the upgrade's answer is whole there is no frame (and frames(afterUpgrade:) would record its absence).
        guard (0..<max(received.count - 3, 0)).contains(where: { received[$0..<$0 + 4].elementsEqual("\r\n\r\n".utf8) }) else { return [] }
        return (try? RealtimeTests.frames(afterUpgrade: received)) ?? []
    }

    /// Reads until `enough` says so of the frames, the server closes, or a read waits 30 s.
    func read(until enough: @escaping @Sendable ([(opcode: UInt8, payload: [UInt8])]) -> Bool) async throws {
        try await receive { [self] in enough(frames) }
    }

    /// Every byte, the upgrade's answer first, once the server has closed the connection (or a
    /// read waited 30 s).
    func readToEnd() async throws -> [UInt8] {
        try await receive { false }
        return received
    }

    private func receive(until enough: @escaping @Sendable () -> Bool) async throws {
        try await OffPool.run { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !enough() {
                let count = recv(socket, &buffer, buffer.count, 0)
                if count <= 0 { return }
                received += buffer[0..<count]
            }
        }
    }

    func close() { Foundation.close(socket) }
}
