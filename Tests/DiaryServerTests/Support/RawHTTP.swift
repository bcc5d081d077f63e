#if canImport(Glibc)
import Glibc
#endif
import TestSupport

/// HTTP/1.1 over a plain socket, for requests a client library would not send: one that
/// hangs up before the answer, or a Content-Length that the body does not match. The
/// socket's blocking calls run off the cooperative pool (`OffPool`), which the server
/// under test shares.
enum RawHTTP {
    /// Sends the bytes and closes the socket without reading the answer.
    static func sendAndHangUp(port: Int, request: String) async throws {
        try await OffPool.run {
            let descriptor = try connected(port: port)
            defer { close(descriptor) }
            try send(Array(request.utf8), on: descriptor)
        }
    }

    /// Sends the bytes and reads the answer: its head, and as much body as it announces,
    /// or what came before the server closed, or before `timeoutSeconds` of silence.
    static func exchange(port: Int, sending bytes: [UInt8], timeoutSeconds: Int = 30) async throws -> String {
        try await OffPool.run { try exchangeBlocking(port: port, sending: bytes, timeoutSeconds: timeoutSeconds) }
    }

    private static func exchangeBlocking(port: Int, sending bytes: [UInt8], timeoutSeconds: Int) throws -> String {
        let descriptor = try connected(port: port)
        defer { close(descriptor) }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        try send(bytes, on: descriptor)
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !isComplete(received) {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += buffer[..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    static func isComplete(_ received: [UInt8]) -> Bool {
        let text = String(decoding: received, as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n") else { return false }
        let lengthLine = text[..<end.lowerBound].split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
        let length = lengthLine.flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        return text[end.upperBound...].utf8.count >= length
    }

    private static func connected(port: Int) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw HarnessError("socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            close(descriptor)
            throw HarnessError("connect() to port \(port) failed")
        }
        return descriptor
    }

    private static func send(_ bytes: [UInt8], on descriptor: Int32) throws {
        let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == bytes.count else { throw HarnessError("send() wrote \(sent) of \(bytes.count) bytes") }
    }
}
