#if !canImport(WSClient)
import Foundation

extension RealtimeSocket {
    /// Opens the socket with URLSession's WebSocket task (Apple's platforms), authenticated
    /// with the bearer header.
    ///
    /// Written to Apple's documented API but not built here: this repository's machines
    /// build Linux only.
    static func open(url: URL, bearer: String) -> RealtimeSocket {
        var request = URLRequest(url: url)
        request.setValue("Bearer \(bearer)", forHTTPHeaderField: "Authorization")
        let task = URLSession.shared.webSocketTask(with: request)
        task.maximumMessageSize = 1 << 20
        task.resume()
        let messages = AsyncThrowingStream<String, any Error> { continuation in
            let reader = Task {
                do {
                    while !Task.isCancelled {
                        switch try await task.receive() {
                        case .string(let text): continuation.yield(text)
                        case .data: continue
                        @unknown default: continue
                        }
                    }
                    continuation.finish()
                } catch {
                    // A close from the server ends receive() with an error; its code is on the task.
                    if task.closeCode != .invalid { continuation.finish() } else { continuation.finish(throwing: error) }
                }
            }
            continuation.onTermination = { _ in reader.cancel() }
        }
        return RealtimeSocket(
            messages: messages,
            send: { text in try await task.send(.string(text)) },
            close: { task.cancel(with: .goingAway, reason: nil) },
            closeCode: { task.closeCode == .invalid ? nil : task.closeCode.rawValue })
    }
}
#endif
