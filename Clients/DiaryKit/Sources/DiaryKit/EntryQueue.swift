public import DiaryAPI
public import Foundation

/// Offline-first posting: entries are kept in a store the moment they are written, then
/// sent in order, with backoff, whenever the app asks (at launch, when the network returns,
/// after writing). Each has a client-chosen id, so a send whose answer was lost, or a queue
/// that crashed between sending and forgetting, posts the entry once, never twice.
///
/// Each send reports every draft as `sent`, `rejected` (the server refused it for good: its
/// problem says why, and it is dropped) or `pending` (kept for the next send). The first
/// draft that must wait holds back those after it, so a diary's entries arrive in the order written.
///
/// Drafts belong to the user who queued them: a send posts only the signed-in user's, with
/// that user's token (a sign-in as someone else during the send stops it), and keeps the
/// others until their user signs in again. Drafts queued before DiaryKit 2.0 name no user:
/// they are never sent on their own; `unclaimed()` lists them, for the app to `claim` for the
/// signed-in user (after asking) or `discard`.
public actor EntryQueue {
    /// What became of one draft in a send.
    public enum Outcome: Sendable {
        /// The server has it; the entry as posted (or as posted before, on a retry).
        case sent(EntryDraft, Entry)
        /// The server refused it for good (`validation_failed`, `forbidden`, `not_found`,
        /// `entry_id_conflict`, `premium_required`, …); it is no longer queued.
        case rejected(EntryDraft, Problem)
        /// Not sent this time (offline, the server busy or in maintenance, an update or
        /// a sign-in needed, or held behind an earlier one); still queued.
        case pending(EntryDraft, reason: String)
    }

    /// How hard one send tries before leaving a draft pending.
    public struct RetryPolicy: Sendable {
        /// Tries per draft in one send.
        public var attempts: Int
        /// The first wait between tries; it doubles.
        public var initialBackoff: Duration
        /// The longest wait.
        public var maximumBackoff: Duration

        /// Creates a policy; the defaults suit an app in the foreground.
        public init(attempts: Int = 3, initialBackoff: Duration = .milliseconds(500), maximumBackoff: Duration = .seconds(8)) {
            self.attempts = attempts
            self.initialBackoff = initialBackoff
            self.maximumBackoff = maximumBackoff
        }
    }

    private let client: DiaryClient
    private let store: any EntryQueueStore
    private let policy: RetryPolicy
    private var sending: Task<[Outcome], any Error>?

    /// Creates a queue over `store`; drafts a previous queue left there are sent by the next `send()`.
    public init(client: DiaryClient, store: any EntryQueueStore, retryPolicy: RetryPolicy = RetryPolicy()) {
        self.client = client
        self.store = store
        self.policy = retryPolicy
    }

    /// Keeps a draft, written by the signed-in user, to send; durable once this returns. Show
    /// it in the timeline as pending. Throws `notSignedIn` when nobody is.
    public func enqueue(_ draft: EntryDraft) async throws {
        guard let userID = await client.userID else { throw DiaryError.notSignedIn }
        var owned = draft
        owned.userID = userID
        try await store.append(owned)
    }

    /// The signed-in user's drafts not yet sent, oldest first; none when nobody is signed in.
    /// Throws when the store cannot be read.
    public func pending() async throws -> [EntryDraft] {
        let drafts = try await store.pendingDrafts()
        guard let userID = await client.userID else { return [] }
        return drafts.filter { $0.userID == userID }
    }

    /// Drafts queued before DiaryKit 2.0, which name no user: ask the user whether they wrote
    /// them, then `claim` or `discard` each. They are never sent otherwise.
    public func unclaimed() async throws -> [EntryDraft] {
        try await store.pendingDrafts().filter { $0.userID == nil }
    }

    /// Gives an unclaimed draft to the signed-in user; it is sent, in its place, from the next `send()`.
    public func claim(_ id: UUID) async throws {
        guard let userID = await client.userID else { throw DiaryError.notSignedIn }
        guard var draft = try await store.pendingDrafts().first(where: { $0.id == id && $0.userID == nil }) else { return }
        draft.userID = userID
        try await store.update(draft)
    }

    /// Forgets an unclaimed draft, or one of the signed-in user's, unsent.
    public func discard(_ id: UUID) async throws {
        let userID = await client.userID
        guard try await store.pendingDrafts().contains(where: { $0.id == id && ($0.userID == nil || $0.userID == userID) }) else { return }
        try await store.remove(id: id)
    }

    /// Sends the signed-in user's drafts in order and reports each. A send already running is
    /// joined, not doubled. Cancelling the caller (an expiring background task) stops the send:
    /// a draft not yet answered stays pending. Throws when the store cannot be read.
    @discardableResult
    public func send() async throws -> [Outcome] {
        if let sending { return try await Self.awaitCancellably(sending) }
        let task = Task { try await sendAll() }
        sending = task
        defer { sending = nil }
        return try await Self.awaitCancellably(task)
    }

    /// Waits for the send; the waiting caller's cancellation cancels it.
    private static func awaitCancellably(_ task: Task<[Outcome], any Error>) async throws -> [Outcome] {
        try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    }

    private func sendAll() async throws -> [Outcome] {
        let stored = try await store.pendingDrafts()
        guard let userID = await client.userID else {
            return stored.filter { $0.userID != nil }.map { .pending($0, reason: "not signed in") }
        }
        let drafts = stored.filter { $0.userID == userID }
        var outcomes: [Outcome] = []
        for (index, draft) in drafts.enumerated() {
            let outcome = await sendOne(draft)
            outcomes.append(outcome)
            if case .pending(_, let reason) = outcome {
                outcomes += drafts[(index + 1)...].map { .pending($0, reason: "held behind an earlier entry: \(reason)") }
                break
            }
        }
        return outcomes
    }

    private func sendOne(_ draft: EntryDraft) async -> Outcome {
        var attempt = 0
        while true {
            attempt += 1
            if Task.isCancelled { return .pending(draft, reason: "cancelled") }
            guard let userID = draft.userID else { return .pending(draft, reason: "unclaimed") }
            do {
                let entry = try await client.acting(as: userID) { try await client.post(draft) }
                do {
                    try await store.remove(id: draft.id)
                } catch {
                    // Sent, but still stored: the next send posts it again and gets the same entry back.
                    return .pending(draft, reason: "sent, but the store could not forget it: \(error)")
                }
                return .sent(draft, entry)
            } catch DiaryError.problem(let problem) where problem.code.refusesTheDraft {
                try? await store.remove(id: draft.id)
                return .rejected(draft, problem)
            } catch DiaryError.problem(let problem) where !problem.isTransient {
                // Not a verdict on the draft (an update needed, a sign-in, a proxy's answer, a code
                // added later): it is kept, and it holds back the drafts after it.
                return .pending(draft, reason: problem.code.rawValue.isEmpty ? "HTTP \(problem.status)" : problem.code.rawValue)
            } catch DiaryError.notSignedIn {
                return .pending(draft, reason: "not signed in")
            } catch DiaryError.sessionEnded {
                return .pending(draft, reason: "the session ended")
            } catch DiaryError.sessionChanged {
                return .pending(draft, reason: "another user signed in")
            } catch {
                guard attempt < policy.attempts else { return .pending(draft, reason: "\(error)") }
                let delay = min(policy.initialBackoff * Int(pow(2.0, Double(attempt - 1))), policy.maximumBackoff)
                let serverDelay: Duration? = if case DiaryError.problem(let problem) = error { problem.retryAfter } else { nil }
                do {
                    try await Task.sleep(for: max(delay, min(serverDelay ?? .zero, policy.maximumBackoff)))
                } catch {
                    return .pending(draft, reason: "cancelled")
                }
            }
        }
    }
}
