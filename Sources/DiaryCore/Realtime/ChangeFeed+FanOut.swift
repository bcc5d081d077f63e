package import DiaryModels
package import Foundation
import Logging
import Metrics
import NIOConcurrencyHelpers

/// A diary's new changes, read once per server by one member's socket and handed to every
/// member's: the sockets run no SQL for them. What may not be shared goes the way it always
/// did, each socket reading under its own policies (`ChangeLogRepository.BatchRefusal`): an
/// anonymous diary, a join, a departure or the diary's own change, more than a page, a
/// socket whose cursor is behind the batch, and a follower who is no member when it is read.
/// A socket whose session was not live when the batch was read gets none of it and ends.
extension ChangeFeed {
    /// Wakes are folded per diary: a wake for a diary a delivery covers is dropped.
    func fanOut(_ woken: inout [UUID: Set<UUID>], moved: Set<UUID>, before known: Following, after next: inout Following) async {
        let subscriptions = state.withLockedValue { Array($0.subscriptions.values) }
        for diary in moved.sorted(by: { $0.uuidString < $1.uuidString }) {
            guard let after = known.positions[diary] else { continue }
            let followers = next.diariesOfUser.filter { $0.value.contains(diary) }.map(\.key)
            // Each follower's session as it stands now: what the batch confirms live, a renewal
            // during the read notwithstanding.
            let queried = Dictionary(subscriptions.filter { followers.contains($0.userID) }.map { (ObjectIdentifier($0), $0.sessionID) }, uniquingKeysWith: { a, _ in a })
            let outcome: String
            do {
                switch try await readBatch(of: diary, after: after, among: followers, sessions: Array(Set(queried.values)), from: subscriptions) {
                case nil:
                    outcome = "no_reader"
                case .success(let batch):
                    let delivery = Delivery(batch)
                    for subscription in subscriptions where batch.members.contains(subscription.userID) {
                        guard let session = queried[ObjectIdentifier(subscription)] else { continue }
                        if batch.liveSessions.contains(session) {
                            subscription.deliver(delivery)
                        } else {
                            subscription.end(.sessionEnded)
                        }
                    }
                    for member in batch.members { woken[member]?.remove(diary) }
                    next.positions[diary] = max(next.positions[diary] ?? batch.through, batch.through)
                    state.withLockedValue { $0.fannedOutChanges += batch.changes.count }
                    outcome = "fanned_out"
                case .failure(let refusal):
                    outcome = "\(refusal)"
                }
            } catch {
                logger.debug("realtime: a diary's changes go to each socket's own read", metadata: ["diary": "\(diary)", "error": "\(error)"])
                outcome = "error"
            }
            Counter(label: "realtime_fanout_reads_total", dimensions: [("outcome", outcome)]).increment()
        }
    }
}

extension ChangeFeed {
    /// The batch, read as the first follower able to: a follower whose session has ended is
    /// told so and gives way to the next, so that one revoked socket does not send every
    /// member to a read of its own. Nil when no follower could read it.
    func readBatch(
        of diary: UUID, after: Int64, among followers: [UUID], sessions: [UUID], from subscriptions: [ChangeSubscription]
    ) async throws -> Result<ChangeLogRepository.DiaryBatch, ChangeLogRepository.BatchRefusal>? {
        for reader in subscriptions where followers.contains(reader.userID) && reader.ending == nil {
            guard let read = reader.reader else { continue }
            do {
                return try await read(reader.identity).batch(of: diary, after: after, limit: options.fanOutPage, among: followers, sessions: sessions)
            } catch let error as DomainError where error.reason == .unauthorized {
                reader.end(.sessionEnded)
            }
        }
        return nil
    }
}

/// One diary's changes after `after` through `through`, for every member's socket alike,
/// read (with its sessions confirmed live) at `readAt`.
package struct Delivery: Sendable {
    package var diary: UUID
    package var after: Int64
    package var through: Int64
    package var readAt: ContinuousClock.Instant
    package var changes: [SharedChange]

    init(_ batch: ChangeLogRepository.DiaryBatch, readAt: ContinuousClock.Instant = .now) {
        diary = batch.diary
        after = batch.after
        through = batch.through
        self.readAt = readAt
        changes = batch.changes.map { SharedChange(position: $0.position, event: $0.event) }
    }
}

/// A change as its viewers see it: two views at most (an entry's author's, and everyone
/// else's), each encoded once, by the first socket that writes it, and its bytes shared by
/// every socket after. Each socket writes its own cursor into the empty `id`.
package final class SharedChange: Sendable {
    package let position: Int64
    private let event: ChangeEvent
    private let encoded = NIOLockedValueBox<(mine: [UInt8]?, theirs: [UInt8]?)>((nil, nil))

    init(position: Int64, event: ChangeEvent) {
        self.position = position
        self.event = event
    }

    /// The event `viewer` is sent, its `id` empty.
    package func event(for viewer: UUID) -> ChangeEvent {
        event.seen(by: viewer)
    }

    /// The event's JSON as `viewer` sees it, with `"id":""` first.
    package func frame(for viewer: UUID, encode: (ChangeEvent) throws -> [UInt8]) rethrows -> [UInt8] {
        let seen = event(for: viewer)
        let mine: Bool = if case .entry(let entry) = seen.data { entry.isMine } else { false }
        if let bytes = encoded.withLockedValue({ mine ? $0.mine : $0.theirs }) { return bytes }
        let bytes = try encode(seen)
        encoded.withLockedValue { if mine { $0.mine = bytes } else { $0.theirs = bytes } }
        return bytes
    }
}
