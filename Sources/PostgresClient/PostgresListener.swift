internal import CLibPQ
import Foundation
public import Logging
import NIOConcurrencyHelpers

/// A notification received on a channel this process listens to.
public struct PostgresNotification: Sendable, Equatable {
    public var channel: String
    public var payload: String
    public var backendPID: Int32
}

/// LISTEN on a dedicated connection, delivering notifications as an async sequence.
///
/// The connection lives on a thread of its own that waits on the socket with
/// `poll`, so it never occupies an event loop or a pooled connection. If the
/// connection drops, it reconnects with backoff and listens again; notifications
/// sent while it was away are lost, as PostgreSQL does not queue them. `onMissed` says
/// when some may have been: each time it begins listening, the first time included, and
/// when a notification is dropped because the reader is 10,000 behind.
public enum PostgresListener {
    /// 100 ms after a failure, doubling to 5 s while failures follow each other; a connection
    /// that listened starts over.
    public static let reconnection = Backoff(base: .milliseconds(100), cap: .seconds(5))

    public static func notifications(
        configuration: PostgresConfiguration,
        channels: [String],
        logger: Logger,
        backoff: Backoff = reconnection,
        onMissed: @escaping @Sendable () -> Void = {}
    ) -> AsyncStream<PostgresNotification> {
        let (stream, continuation) = AsyncStream.makeStream(of: PostgresNotification.self, bufferingPolicy: .bufferingNewest(10_000))
        let stopped = NIOLockedValueBox(false)
        continuation.onTermination = { _ in stopped.withLockedValue { $0 = true } }
        let thread = Thread {
            var attempts = Backoff.Attempts(backoff)
            while !stopped.withLockedValue({ $0 }) {
                do {
                    try listen(configuration: configuration, channels: channels, stopped: stopped, continuation: continuation, onMissed: onMissed) {
                        attempts.succeeded()
                        onMissed()
                    }
                } catch {
                    let delay = attempts.failed()
                    logger.warning("postgres listener reconnecting", metadata: ["error": "\(error)", "retryIn": "\(delay)"])
                    usleep(UInt32(clamping: delay.microseconds))
                }
            }
        }
        thread.name = "postgres-listener"
        thread.start()
        return stream
    }

    private static func listen(
        configuration: PostgresConfiguration,
        channels: [String],
        stopped: NIOLockedValueBox<Bool>,
        continuation: AsyncStream<PostgresNotification>.Continuation,
        onMissed: @Sendable () -> Void,
        listening: () -> Void
    ) throws {
        let pairs = configuration.keywords
        guard let handle = withCStringArray(pairs.map(\.0) + [nil], { keywords in
            withCStringArray(pairs.map(\.1) + [nil]) { values in PQconnectdbParams(keywords, values, 0) }
        }) else {
            throw PostgresError(kind: .connectionFailure, message: "libpq could not allocate a connection")
        }
        defer { PQfinish(handle) }
        guard PQstatus(handle) == CONNECTION_OK else {
            throw PostgresError(kind: .connectionFailure, message: LibPQConnection.errorMessage(handle))
        }
        for channel in channels {
            // LISTEN takes no parameters; the channel is quoted as an identifier by libpq itself.
            guard let quoted = PQescapeIdentifier(handle, channel, channel.utf8.count) else {
                throw PostgresError(kind: .invalidInput, message: "channel name cannot be quoted")
            }
            let command = "LISTEN " + String(cString: quoted)
            PQfreemem(quoted)
            guard let result = PQexec(handle, command) else {
                throw PostgresError(kind: .connectionFailure, message: LibPQConnection.errorMessage(handle))
            }
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_COMMAND_OK else {
                throw LibPQConnection.error(from: result, connection: handle)
            }
        }
        listening()
        while !stopped.withLockedValue({ $0 }) {
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 200)
            if ready < 0 && errno != EINTR {
                throw PostgresError(kind: .connectionFailure, message: "poll failed: errno \(errno)")
            }
            guard ready > 0 else { continue }
            guard PQconsumeInput(handle) == 1, PQstatus(handle) == CONNECTION_OK else {
                throw PostgresError(kind: .connectionFailure, message: LibPQConnection.errorMessage(handle))
            }
            while let notice = PQnotifies(handle) {
                let notification = PostgresNotification(
                    channel: String(cString: notice.pointee.relname),
                    payload: String(cString: notice.pointee.extra),
                    backendPID: notice.pointee.be_pid
                )
                PQfreemem(notice)
                if case .dropped = continuation.yield(notification) { onMissed() }
            }
        }
    }
}
