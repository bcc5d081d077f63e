public import Foundation
#if canImport(FoundationNetworking)
public import FoundationNetworking
#endif

/// The realtime socket over URLSession's WebSocket task: DiaryKit's default, from the
/// configuration's session.
///
/// On Linux, FoundationNetworking's WebSocket task needs a libcurl built with WebSocket
/// support (8.11 and later enable it by default); Debian 12's 7.88 has none, so this
/// repository's tests open the socket through a `RealtimeTransport` of their own (README).
public struct URLSessionRealtimeTransport: RealtimeTransport {
    /// The session the sockets are opened in.
    public let session: URLSession

    /// Creates a transport over `session`.
    public init(session: URLSession) {
        self.session = session
    }

    /// Opens the socket; frames are received one at a time as the stream is read.
    public func connect(to url: URL, headers: [String: String]) -> RealtimeConnection {
        var request = URLRequest(url: url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let task = session.webSocketTask(with: request)
        task.maximumMessageSize = 1 << 20
        task.resume()
        let messages = AsyncThrowingStream<String, any Error> {
            while true {
                do {
                    switch try await task.receive() {
                    case .string(let text): return text
                    case .data: continue
                    @unknown default: continue
                    }
                } catch {
                    // A close from the server ends receive() with an error; its code is on the task.
                    if task.closeCode != .invalid { return nil }
                    throw error
                }
            }
        }
        return RealtimeConnection(
            messages: messages,
            send: { text in try await task.send(.string(text)) },
            close: { task.cancel(with: .goingAway, reason: nil) },
            closeCode: { task.closeCode == .invalid ? nil : task.closeCode.rawValue })
    }
}
