import DiaryCore
import DiaryModels
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import PostgresClient

/// A socket's deliveries: `ready`, an optional `resync`, the changes after `since` in every
/// diary, then, each time the feed tells it something arrived, the changes it was handed
/// (`Delivery`), and those of the diaries it names, which it reads itself: one statement a
/// diary. Each delivery is a task that writes what arrived and ends; the socket's position
/// waits in `State` for the next.
extension RealtimeSocket {
    /// How a delivery ended: with nothing left to write, or with the socket to close (nil: quietly).
    enum DeliveryEnd {
        case idle
        case close(Closing?)
    }

    /// Starts a delivery, unless one runs: that one goes on with what arrived.
    func startDelivery(_ outbound: some RealtimeOutbound, logger: Logger) {
        state.withLockedValue { state in
            guard !state.ended, !state.closing else { return }
            guard state.delivery == nil else {
                state.deliverAgain = true
                return
            }
            state.delivery = Task { await self.deliverUntilIdle(outbound, logger: logger) }
        }
    }

    private func deliverUntilIdle(_ outbound: some RealtimeOutbound, logger: Logger) async {
        while true {
            let (cursor, unread) = state.withLockedValue { ($0.cursor, $0.unread) }
            let (position, left, end) = await deliverWhatArrived(from: cursor, unread: unread, outbound, logger: logger)
            let again = state.withLockedValue { state in
                state.cursor = position
                state.unread = left
                guard case .idle = end, state.deliverAgain, !state.ended, !Task.isCancelled else {
                    state.delivery = nil
                    state.deliverAgain = false
                    return false
                }
                state.deliverAgain = false
                return true
            }
            if case .close(let closing) = end { close(closing, outbound: outbound, logger: logger, writing: true) }
            guard again else { return }
        }
    }

    /// Whether the socket is closing already: a failure then is the close's, not news.
    private var isClosing: Bool { state.withLockedValue { $0.closing || $0.ended } }

    private func repository() -> ChangeLogRepository {
        subscription.countOwnRead()
        return reader(subscription.identity)
    }

    /// Writes what arrived, from `cursor` (nil: the socket's first delivery, `begin`), until
    /// nothing more has: the diaries it must read itself (`readOwn`), then the changes it was
    /// handed (`writeHanded`), then whatever arrived meanwhile. Returns where it stands.
    private func deliverWhatArrived(
        from start: ChangeCursor?, unread unreadAtStart: Unread, _ outbound: some RealtimeOutbound, logger: Logger
    ) async -> (ChangeCursor?, Unread, DeliveryEnd) {
        var unread = unreadAtStart
        var handed: [Delivery] = []
        var cursor: ChangeCursor
        if let start {
            cursor = start
        } else {
            switch await begin(outbound) {
            case .waiting: return (nil, unread, .idle)
            case .failed: return (nil, unread, .close(nil))
            case .begun(let begun, let reading, let arrived):
                (cursor, unread, handed) = (begun, reading, arrived)
            }
        }
        while !Task.isCancelled {
            if let ending = subscription.ending { return (cursor, unread, .close(Closing(ending))) }
            if unread != .nothing {
                switch await readOwn(unread, cursor: &cursor, outbound, logger: logger) {
                case .readAll: unread = .nothing
                case .readMore: continue
                case .close(let closing): return (cursor, unread, .close(closing))
                }
            }
            if !handed.isEmpty {
                guard let behind = await writeHanded(handed, cursor: &cursor, outbound, logger: logger) else { return (cursor, unread, .close(nil)) }
                handed = []
                if !behind.isEmpty {
                    unread = .diaries(behind)
                    continue
                }
            }
            let arrival = subscription.takeArrival()
            if arrival.diaries.isEmpty && arrival.deliveries.isEmpty { break }
            unread = .diaries(arrival.diaries)
            handed = arrival.deliveries
        }
        return (cursor, unread, .idle)
    }

    private enum Beginning {
        /// The feed has not said where the socket begins yet.
        case waiting
        /// `ready` could not be written.
        case failed
        /// `ready` written at the cursor; then what to read, and what was handed.
        case begun(ChangeCursor, Unread, [Delivery])
    }

    /// The socket's first delivery: `ready` at `since`, then every diary's changes after it;
    /// or, without a `since` it can read, where the feed begins it, with `resync` for the one
    /// it could not read. Until the feed has said where, what arrives is behind that.
    private func begin(_ outbound: some RealtimeOutbound) async -> Beginning {
        let resumed = since.flatMap(ChangeCursor.init)
        let cursor: ChangeCursor, unread: Unread, handed: [Delivery]
        if let resumed {
            (cursor, unread, handed) = (resumed, .everyDiary, [])
        } else {
            let arrival = subscription.takeArrival()
            guard let begun = arrival.start else { return .waiting }
            (cursor, unread, handed) = (begun, .diaries(arrival.diaries), arrival.deliveries)
        }
        do {
            try await outbound.writeText(ByteBuffer(string: Self.readyFrame(cursor)))
            if since != nil, resumed == nil { try await outbound.writeText(ByteBuffer(string: Self.resyncFrame(cursor))) }
        } catch {
            return .failed
        }
        return .begun(cursor, unread, handed)
    }

    private enum OwnRead {
        /// Everything `unread` named is written.
        case readAll
        /// More to read: the next page, or the rest of a page gone stale, or after the database
        /// came back.
        case readMore
        case close(Closing?)
    }

    /// One page of what the socket reads itself, as its caller, written while it is fresh
    /// (`mayWrite`); `cursor` moves past what was written.
    private func readOwn(_ unread: Unread, cursor: inout ChangeCursor, _ outbound: some RealtimeOutbound, logger: Logger) async -> OwnRead {
        do {
            let outcome = switch unread {
            case .diaries(let diaries): try await repository().changes(after: cursor, inDiaries: diaries, limit: options.pageSize)
            case .everyDiary: try await repository().changes(after: cursor, limit: options.pageSize)
            }
            switch outcome {
            case .resyncRequired:
                cursor = try await repository().position()
                try await outbound.writeText(ByteBuffer(string: Self.resyncFrame(cursor)))
                return .readAll
            case .page(let page):
                let readAt = ContinuousClock.now
                var written = 0
                defer { AppMetrics.recordRealtimeEvents(written) }
                for event in page.events {
                    guard mayWrite(readAt: readAt) else { break }
                    try await outbound.writeText(ByteBuffer(bytes: try StreamingJSONEncoder().encode(event)))
                    written += 1
                }
                guard written == page.events.count else {
                    // Stale, or the session ended: on from the last change written.
                    if written > 0, let reached = ChangeCursor(page.events[written - 1].id) { cursor = reached }
                    return .readMore
                }
                cursor = page.next
                return page.hasMore ? .readMore : .readAll
            }
        } catch let error as DomainError where error.reason == .unauthorized {
            return .close(Closing(.sessionEnded))
        } catch let error as PostgresError {
            // The database is away: keep the socket, try again shortly.
            logger.warning("realtime socket cannot read changes", metadata: ["error": "\(error)"])
            try? await Task.sleep(for: Self.databaseRetry.delay(attempt: 1))
            return .readMore
        } catch {
            if !isClosing { logger.warning("realtime socket closes: its changes cannot be read", metadata: ["error": "\(error)"]) }
            return .close(nil)
        }
    }

    /// Writes the changes handed to the socket; returns the diaries it must read itself instead
    /// (`write`), or nil when a write failed and the socket closes.
    private func writeHanded(_ handed: [Delivery], cursor: inout ChangeCursor, _ outbound: some RealtimeOutbound, logger: Logger) async -> Set<UUID>? {
        var behind = Set<UUID>()
        do {
            for delivery in handed where !(try await write(delivery, after: &cursor, to: outbound)) {
                behind.insert(delivery.diary)
            }
        } catch {
            if !isClosing { logger.warning("realtime socket closes: a change cannot be written", metadata: ["error": "\(error)"]) }
            return nil
        }
        return behind
    }

    /// Whether a change read at `readAt` may be written now: within `Options.freshness` of its
    /// read, and the session not ended since (a revocation's NOTIFY ends it at once).
    private func mayWrite(readAt: ContinuousClock.Instant) -> Bool {
        subscription.ending == nil && ContinuousClock.now - readAt <= options.freshness
    }

    /// Writes the changes of `delivery` after the socket's own position in its diary, each
    /// with the socket's cursor as its id; false, once it writes no more, when the socket has
    /// not reached where the delivery begins (or never read the diary), or `mayWrite` says no,
    /// and the socket must read the rest itself (or close).
    private func write(_ delivery: Delivery, after cursor: inout ChangeCursor, to outbound: some RealtimeOutbound) async throws -> Bool {
        guard let position = cursor[delivery.diary], position >= delivery.after else { return false }
        var written = 0
        for change in delivery.changes where change.position > position {
            // Each change, not only the first: a socket held back by its reader can be past
            // the bound halfway; it reads the rest itself, from the last change written.
            guard mayWrite(readAt: delivery.readAt) else {
                AppMetrics.recordRealtimeEvents(written)
                return false
            }
            cursor[delivery.diary] = change.position
            let frame = try change.frame(for: subscription.userID) { try StreamingJSONEncoder().encode($0) }
            try await outbound.writeText(Self.withID(cursor.encoded, frame, orEncoding: change.event(for: subscription.userID)))
            written += 1
        }
        cursor[delivery.diary] = max(cursor[delivery.diary] ?? position, delivery.through)
        AppMetrics.recordRealtimeEvents(written)
        return true
    }

    static let emptyID = Array(#"{"id":"""#.utf8)

    /// The shared frame with `id` written into its empty id; encoded anew, with the id, should
    /// the shared bytes not begin as the encoder writes an event.
    static func withID(_ id: String, _ frame: [UInt8], orEncoding event: ChangeEvent) throws -> ByteBuffer {
        guard frame.starts(with: emptyID) else {
            var event = event
            event.id = id
            return ByteBuffer(bytes: try StreamingJSONEncoder().encode(event))
        }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(frame.count + id.utf8.count)
        buffer.writeBytes(frame[..<(emptyID.count - 1)])
        buffer.writeString(id)
        buffer.writeBytes(frame[(emptyID.count - 1)...])
        return buffer
    }
}
